"""Checks that every test that ctest knows has a TIMEOUT, so that a hang fails that test by name.

Usage: check_timeouts.py CTEST BUILD_DIR. Lists the tests with `ctest --show-only=json-v1` (which
includes the GoogleTest cases discovered from each test binary) and prints one line per test
without a positive TIMEOUT; exit status 1 when there is one, 2 when ctest cannot list them.
Placeholders of test binaries not built yet (`*_NOT_BUILT`) are not tests and are skipped.
"""
import json
import subprocess
import sys


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    ctest, build = sys.argv[1], sys.argv[2]
    run = subprocess.run([ctest, "--show-only=json-v1", "--test-dir", build],
                         capture_output=True, text=True)
    if run.returncode != 0:
        print(f"check_timeouts: ctest failed ({run.returncode}): {run.stderr}", file=sys.stderr)
        return 2
    tests = json.loads(run.stdout).get("tests", [])
    missing, placeholders = [], 0
    for test in tests:
        name = test.get("name", "?")
        if name.endswith("_NOT_BUILT"):
            placeholders += 1
            continue
        props = {p.get("name"): p.get("value") for p in test.get("properties", [])}
        if not props.get("TIMEOUT") or float(props["TIMEOUT"]) <= 0:
            missing.append(name)
    for name in missing:
        print(f"no TIMEOUT: {name}")
    counted = len(tests) - placeholders
    print(f"{counted - len(missing)} of {counted} tests have a TIMEOUT"
          f" ({placeholders} placeholders of test binaries not built skipped)")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
