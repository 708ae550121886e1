/* keys_cmd.h - `shardsim keys`: the table of scenario keys, as the loader
 * reads them.
 *
 * Loads each SCENARIO (files, or folders: their *.json, not recursive) with
 * key recording on (json.h js_record) and keeps every key of the scenario
 * file itself (not of the model, topology or DeepSpeed files it names) that
 * a getter asked for or an object allowed: its path (array indices as []),
 * what it is (integer, number, boolean, string, enum, array, or key when no
 * getter typed it in these files), whether it is required, what it accepts
 * and its default. The table is a product of the loader, so it cannot
 * disagree with what the loader accepts; docs and tests are checked against
 * it (tests/e2e/keys.sh).
 *
 * Output (stdout), rows sorted by path: a text table (default); --markdown;
 * --cases, one bad-input case per typed key in tests/bad-inputs/cases.txt's
 * form ("2|$.path|SCENARIO --set path=BAD"): a value of the wrong type, or
 * one past a bound, which the loader must refuse naming the path.
 *
 * A file that does not load as a scenario is reported on stderr and
 * skipped. Exit codes: 0; 2 for usage errors or when no file loaded; 1 when
 * out of memory.
 */
#ifndef CLI_KEYS_CMD_H
#define CLI_KEYS_CMD_H

int keys_cmd(int argc, char **argv);

#endif
