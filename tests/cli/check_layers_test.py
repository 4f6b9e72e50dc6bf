#!/usr/bin/env python3
"""cmake/check-layers.py on small trees of its own: a clean tree passes, an upward include, a
plugin including the core, and a file in no layer fail with a message naming the file."""
import os
import subprocess
import sys
import tempfile

CHECKER = sys.argv[1]
TABLE = """# Design
## Layer order
| # | Layer | Directories | Public headers |
|---|---|---|---|
| 1 | low | `core/src/low` | `low.h` |
| 2 | high | `core/src/high` | |
| 3 | plugin-api | `plugin-api/include` | `plugin_api.h` |
## Next
"""


def run(files):
    with tempfile.TemporaryDirectory() as root:
        files = dict(files)
        files["docs/design.md"] = TABLE
        files.setdefault("core/include/conflux/low.h", "")
        files.setdefault("plugin-api/include/conflux/plugin_api.h", "")
        for path, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
            with open(os.path.join(root, path), "w") as f:
                f.write(text)
        p = subprocess.run([sys.executable, CHECKER, root], capture_output=True, text=True)
        return p.returncode, p.stdout + p.stderr


def expect(name, files, rc, needle):
    got_rc, out = run(files)
    if got_rc != rc or needle not in out:
        print(f"FAIL {name}: exit {got_rc} (want {rc}), output:\n{out}")
        sys.exit(1)
    print(f"ok {name}")


expect("clean", {"core/src/low/a.cc": '#include "conflux/low.h"\n',
                 "core/src/high/b.cc": '#include "low/a.h"\n', "core/src/low/a.h": ""},
       0, "none upward")
expect("upward", {"core/src/low/a.cc": '#include "high/b.h"\n', "core/src/high/b.h": ""},
       1, "core/src/low/a.cc:1")
expect("plugin", {"plugins/x/k.cc": '#include "conflux/plugin_api.h"\n#include "low/a.h"\n',
                  "core/src/low/a.h": ""}, 1, "plugins/x/k.cc:2")
expect("unplaced", {"core/src/other/c.cc": '#include "conflux/low.h"\n'}, 2, "in no layer")
