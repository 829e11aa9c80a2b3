import os
import sys

# The helper modules (fixtures.py, chunking.py) are imported by name from the tests.
sys.path.insert(0, os.path.dirname(__file__))

# The serving-stack tests run in each stack's own venv (scripts/integration_venvs.sh,
# its own step in scripts/test.sh), not in this interpreter.
collect_ignore = ["integrations"]
