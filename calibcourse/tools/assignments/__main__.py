"""``python -m calibcourse.tools.assignments``: the command line (:mod:`.cli`)."""
import sys

from calibcourse.tools.assignments.cli import main

sys.exit(main())
