import sys

from batio.cli import main

sys.exit(main())
