# Shortcuts; bootstrap.py does the work and needs nothing but Python (see README).
.PHONY: setup demo test bench ui serve clean
setup: ; python3 bootstrap.py setup
demo: ; python3 bootstrap.py demo
test: ; python3 bootstrap.py test
bench: ; python3 bootstrap.py bench all
ui: ; python3 bootstrap.py loci ui
serve: ; python3 bootstrap.py loci serve
clean: ; rm -rf .venv .pytest_cache .ruff_cache
