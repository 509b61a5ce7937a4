"""The app's entry script (`fiolake app` runs it): the login gate, then the pages the
reader's role may open.

Every page runs through here, so nothing of the lake is drawn before `current_role`
has let the reader in; the pages a role may not open are left out of the navigation,
and Streamlit answers their URLs with the default page.

The pages live in `views/`, not `pages/`: Streamlit serves a `pages/` folder beside the
entry script by itself whenever the script has not called `st.navigation`, which is the
case on the sign-in page, so each of them was one URL away from a reader who had not
signed in (the browser test of /SQL logged out caught it).
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from fiolake.app.access import hidden_pages
from fiolake.app.login import current_role
from fiolake.app.serve import readers

HERE = Path(__file__).resolve().parent

role = current_role()
hidden = hidden_pages(role)
pages = [st.Page(HERE / "Home.py", title="Home", default=True)] + [
    page
    for page in (st.Page(path) for path in sorted((HERE / "views").glob("[0-9]*_*.py")))
    if page.url_path not in hidden
]
with readers.running():  # the server's warm-up waits while a reader's page runs
    st.navigation(pages).run()
