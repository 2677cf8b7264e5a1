# Convenience wrapper around scripts/ (the README's commands work without make).
.PHONY: run test build clean
run:
	bash scripts/run
test:
	bash scripts/test
build:
	bash scripts/setup.sh
clean:
	rm -rf build out
