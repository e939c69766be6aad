/* detect_table.c: placeholder, being written. */
