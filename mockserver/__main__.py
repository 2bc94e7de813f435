import sys

from mockserver.cli.main import main

sys.exit(main())
