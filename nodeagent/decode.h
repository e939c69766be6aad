/* decode.h: placeholder, being written. */
