import v8 from 'node:v8';

/**
 * Runtime flags for the server process; main.ts imports this module first, so it runs before the
 * rest of the server is loaded.
 *
 * No allocation-site pretenuring: under load (50 connections, each request waiting its turn for
 * a few ms), V8's pretenuring feedback sometimes decides that objects from some allocation sites
 * survive, and from then on allocates them straight in the old generation, although they die with
 * their request. The old generation then grows by ~60 MB/s and is cleared by a full GC every 2 s,
 * young-generation GCs take ~8 ms instead of ~1 ms, and the process sits at ~290 MB RSS instead of
 * ~160 MB. Whether it happens depends on timing, so the same build under the same load served
 * GET /agents/:id at 60-90 µs of CPU per request one time and 43-47 the next.
 * The server's requests are short-lived, so the feedback buys nothing here.
 */
v8.setFlagsFromString('--no-allocation-site-pretenuring');
