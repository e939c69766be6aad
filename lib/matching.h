/* matching.h (internal): maximum-weight perfect matching (Edmonds' blossom
 * algorithm) on a complete graph with an even number of vertices, used by
 * the SPCD §IV-B mapper. */
#ifndef COMMAP_MATCHING_H
#define COMMAP_MATCHING_H
#endif
