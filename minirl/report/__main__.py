"""``python -m minirl.report``: rewrite the results blocks of README.md and RESULTS.md; ``--check``: exit 1 when one
differs from its record (``minirl.report.main``)."""

import sys

from minirl.report import main

sys.exit(main())
