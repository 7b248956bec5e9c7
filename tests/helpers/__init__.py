"""What the test modules share: factories, data builders, stand-in servers and clients. Test modules import
from here, never from one another (tests/test_test_layout.py checks it)."""
