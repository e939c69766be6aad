# Fuzz targets (libFuzzer entry points).  In 'make check' each runs over its
# seed corpus and a bounded number of mutated inputs with a standalone driver.
