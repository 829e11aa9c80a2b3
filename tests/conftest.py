import os
import sys

# The helper modules (fixtures.py, chunking.py) are imported by name from the tests.
sys.path.insert(0, os.path.dirname(__file__))
