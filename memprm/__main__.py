import sys

from memprm.cli import main

sys.exit(main())
