/* perf_sample.c: placeholder, being written. */
