// TOML to cJSON through toml++. toml_shim.h states the contract; this is
// the project's only C++ (C++17, toml++ 3.3 as Debian builds it: a shared
// library, exceptions on).
#include "toml_shim.h"

#include <cmath>
#include <new>
#include <sstream>
#include <string>
#include <string_view>

#include <cjson/cJSON.h>
#include <toml++/toml.h>

namespace {

constexpr int64_t exact_max = int64_t(1) << 53; // json.h's bound on integers

struct conv {
    const char *file;
    ss_err *err;
    int rc = SS_OK;

    cJSON *fail(const std::string &path, const char *what)
    {
        char where[512];
        std::snprintf(where, sizeof where, "%s: %s", file, path.empty() ? "(top)" : path.c_str());
        rc = ss_fail(err, SS_E_INPUT, where, "%s", what);
        return nullptr;
    }

    cJSON *nomem()
    {
        rc = ss_fail(err, SS_E_NOMEM, nullptr, "out of memory");
        return nullptr;
    }

    cJSON *scalar(const toml::node &n, const std::string &path)
    {
        if (auto s = n.as_string()) return cJSON_CreateString(s->get().c_str());
        if (auto b = n.as_boolean()) return cJSON_CreateBool(b->get());
        if (auto i = n.as_integer()) {
            int64_t v = i->get();
            if (v > exact_max || v < -exact_max)
                return fail(path, "an integer beyond 2^53 (9007199254740992): expected one a "
                                  "double holds exactly");
            return cJSON_CreateNumber(double(v));
        }
        if (auto f = n.as_floating_point()) {
            if (!std::isfinite(f->get())) return fail(path, "inf or nan: expected a finite number");
            return cJSON_CreateNumber(f->get());
        }
        std::ostringstream os; // a date, a time or both: its TOML text
        if (auto d = n.as_date()) os << d->get();
        else if (auto t = n.as_time()) os << t->get();
        else if (auto dt = n.as_date_time()) os << dt->get();
        return cJSON_CreateString(os.str().c_str());
    }

    cJSON *array(const toml::array &a, const std::string &path)
    {
        cJSON *out = cJSON_CreateArray();
        if (!out) return nomem();
        for (size_t i = 0; i < a.size(); i++) {
            cJSON *v = value(a[i], path + "[" + std::to_string(i) + "]");
            if (!v || !cJSON_AddItemToArray(out, v)) {
                cJSON_Delete(v);
                cJSON_Delete(out);
                return rc ? nullptr : nomem();
            }
        }
        return out;
    }

    cJSON *table(const toml::table &t, const std::string &path)
    {
        cJSON *out = cJSON_CreateObject();
        if (!out) return nomem();
        for (auto &&[k, v] : t) {
            std::string key(k.str());
            cJSON *c = value(v, path.empty() ? key : path + "." + key);
            if (!c || !cJSON_AddItemToObject(out, key.c_str(), c)) {
                cJSON_Delete(c);
                cJSON_Delete(out);
                return rc ? nullptr : nomem();
            }
        }
        return out;
    }

    cJSON *value(const toml::node &n, const std::string &path)
    {
        if (auto t = n.as_table()) return table(*t, path);
        if (auto a = n.as_array()) return array(*a, path);
        cJSON *v = scalar(n, path);
        return v || rc ? v : nomem();
    }
};

} // namespace

extern "C" int toml_to_json(const char *file, const char *text, size_t len, cJSON **out,
                            ss_err *err)
{
    try {
        toml::table t = toml::parse(std::string_view(text, len), std::string_view(file));
        conv c{file, err};
        cJSON *j = c.table(t, "");
        if (!j) return c.rc ? c.rc : ss_fail(err, SS_E_NOMEM, nullptr, "out of memory");
        *out = j;
        return SS_OK;
    } catch (const toml::parse_error &e) {
        char where[512];
        const auto &b = e.source().begin;
        std::snprintf(where, sizeof where, "%s:%u:%u", file, unsigned(b.line), unsigned(b.column));
        return ss_fail(err, SS_E_INPUT, where, "not valid TOML: %s", std::string(e.description()).c_str());
    } catch (const std::bad_alloc &) {
        return ss_fail(err, SS_E_NOMEM, nullptr, "out of memory");
    } catch (const std::exception &e) {
        return ss_fail(err, SS_E_INPUT, file, "cannot read TOML: %s", e.what());
    }
}

extern "C" bool toml_available(void)
{
    return true;
}
