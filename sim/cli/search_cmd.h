/* search_cmd.h - `shardsim search`: every layout and sharding choice within
 * the given bounds, simulated, ranked with device memory as a hard limit.
 *
 * Parses the command's options (after "search"), loads the scenario once
 * for its defaults (world, experts, strategy, batch), enumerates the points
 * (run/search.h), simulates them as a zip-mode sweep (run/sweep.h) on -j
 * threads, writes every row to --csv FILE (whole or not at all) and prints
 * the best point and the memory/time Pareto front to stdout; stdout does
 * not depend on the thread count. A progress bar goes to stderr when it is
 * a terminal, one final line otherwise, nothing with --quiet.
 *
 * Returns the process exit code: 0; 1 when no point fits (the CSV is still
 * written) or on an internal error; 2 for bad input or usage.
 */
#ifndef CLI_SEARCH_CMD_H
#define CLI_SEARCH_CMD_H

int search_cmd(int argc, char **argv);

#endif
