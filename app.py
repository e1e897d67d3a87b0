"""Start the planner from a checkout: ``streamlit run app.py``.

A thin shim: the app ships inside the package (tcocalc/app/: main.py routes to one module per page), so an
installed wheel starts the same app with ``tcocalc app``. This file only runs the packaged router.
"""

import importlib.util
import runpy
from pathlib import Path

package = Path(importlib.util.find_spec("tcocalc").origin).resolve().parent
runpy.run_path(str(package / "app" / "main.py"), run_name="__main__")
