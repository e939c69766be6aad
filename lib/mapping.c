/* mapping.c: placeholder, being written. */
