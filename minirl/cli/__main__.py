"""``python -m minirl.cli ...`` is the ``minirl`` command."""

import sys

from minirl.cli import main

sys.exit(main())
