/* perf_sample.h: placeholder, being written. */
