/* toml_shim.h without toml++: the build found no libtomlplusplus-dev, so
 * TOML input fails with a message saying what to install. */
#include "toml_shim.h"

int toml_to_json(const char *file, const char *text, size_t len, struct cJSON **out, ss_err *err)
{
    (void)text, (void)len, (void)out;
    return ss_fail(err, SS_E_INPUT, file,
                   "this shardsim was built without TOML support: install Debian's "
                   "libtomlplusplus-dev (and a C++17 compiler, g++), then configure and build "
                   "again (scripts/deps.sh installs both)");
}

bool toml_available(void)
{
    return false;
}
