/* cost.c: placeholder, being written. */
