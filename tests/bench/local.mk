# Benchmarks: built by 'make check' but run by hand (see docs/PERFORMANCE.md).
