"""``python -m minirl.results``: show a record, or run notebooks for theirs (``minirl.results.main``)."""

import sys

from minirl.results import main

sys.exit(main())
