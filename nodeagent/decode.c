/* decode.c: placeholder, being written. */
