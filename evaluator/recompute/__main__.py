"""python -m evaluator.recompute board.zip [--check] [--key …]: see the package's docstring."""

import sys

from . import main

sys.exit(main())
