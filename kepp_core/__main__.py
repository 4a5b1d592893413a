import sys

from kepp_core.cli import main

sys.exit(main())
