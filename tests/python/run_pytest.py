"""Run pytest on the Python package's tests (tests/python/python.cmake): exit 77
(ctest's skip) with a message when pytest, numpy or scipy is not installed,
and check that the package imported is the one this build made (PYTHONPATH)."""
import importlib.util
import os
import sys

missing = [m for m in ("pytest", "numpy", "scipy") if importlib.util.find_spec(m) is None]
if missing:
    print(f"python_pytest skipped: {', '.join(missing)} not installed for {sys.executable} "
          f"(pip install {' '.join(missing)})")
    sys.exit(77)
import neurosolve  # noqa: E402

expect = os.environ.get("PYTHONPATH", "").split(os.pathsep)[0]
if expect and not os.path.abspath(neurosolve.__file__).startswith(os.path.abspath(expect)):
    print(f"python_pytest: imported {neurosolve.__file__}, expected the build's package under {expect}")
    sys.exit(1)
print(f"neurosolve {neurosolve.__version__} from {os.path.dirname(neurosolve.__file__)}; build {neurosolve.build_info()}")
import pytest  # noqa: E402

sys.exit(pytest.main(sys.argv[1:]))
