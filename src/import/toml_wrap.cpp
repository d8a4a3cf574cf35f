// src/import/toml_wrap.cpp — mp_toml_walk() (toml_wrap.h): toml++ v3 (header-only, exceptions
// off in its API) parses the text; the tables are walked in order and each leaf handed to C.
// Nothing C++ crosses the boundary: every exception is caught here.
#define TOML_HEADER_ONLY 1
#define TOML_EXCEPTIONS 0
#include <toml++/toml.h>

#include <cstdio>
#include <cstring>
#include <new>
#include <sstream>
#include <string>

#include "import/toml_wrap.h"

namespace {

struct walker {
    mp_toml_leaf_fn fn;
    void *ctx;
};

int leaf(const walker &w, const std::string &path, const toml::node &n, std::string *joined)
{
    char buf[64];
    std::string val;
    int is_string = 0;
    if (auto s = n.as_string()) {
        val = s->get();
        is_string = 1;
    } else if (auto i = n.as_integer()) {
        std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(i->get()));
        val = buf;
    } else if (auto f = n.as_floating_point()) {
        std::snprintf(buf, sizeof buf, "%.17g", f->get());
        val = buf;
    } else if (auto b = n.as_boolean()) {
        val = b->get() ? "true" : "false";
    } else {
        std::ostringstream os; // dates and times, as TOML writes them
        if (auto d = n.as_date()) os << d->get();
        else if (auto t = n.as_time()) os << t->get();
        else if (auto dt = n.as_date_time()) os << dt->get();
        val = os.str();
    }
    if (joined) {
        if (!joined->empty())
            *joined += ",";
        *joined += val;
    }
    return w.fn(w.ctx, path.c_str(), val.c_str(), static_cast<int>(n.source().begin.line),
                is_string);
}

int walk(const walker &w, const std::string &prefix, const toml::node &n, int depth);

int walk_array(const walker &w, const std::string &path, const toml::array &a, int depth)
{
    std::string joined;
    bool scalars = true;
    for (size_t i = 0; i < a.size(); i++) {
        std::string p = path + "." + std::to_string(i);
        const toml::node &e = *a.get(i);
        int r = (e.is_table() || e.is_array()) ? (scalars = false, walk(w, p, e, depth + 1))
                                               : leaf(w, p, e, &joined);
        if (r)
            return r;
    }
    if (scalars)
        return w.fn(w.ctx, path.c_str(), joined.c_str(), static_cast<int>(a.source().begin.line), 0);
    return 0;
}

int walk(const walker &w, const std::string &prefix, const toml::node &n, int depth)
{
    if (depth > 64)
        return 0;
    if (auto t = n.as_table()) {
        for (auto &&[k, v] : *t) {
            std::string p = prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
            int r = walk(w, p, v, depth + 1);
            if (r)
                return r;
        }
        return 0;
    }
    if (auto a = n.as_array())
        return walk_array(w, prefix, *a, depth);
    return leaf(w, prefix, n, nullptr);
}

} // namespace

extern "C" int mp_toml_walk(const char *text, size_t len, mp_toml_leaf_fn fn, void *ctx,
                            char *err, size_t cap, int *err_line)
{
    try {
        toml::parse_result r = toml::parse(std::string_view(text, len));
        if (!r) {
            const toml::parse_error &e = r.error();
            if (err_line)
                *err_line = static_cast<int>(e.source().begin.line);
            if (err && cap)
                std::snprintf(err, cap, "line %d, column %d: %.*s",
                              static_cast<int>(e.source().begin.line),
                              static_cast<int>(e.source().begin.column),
                              static_cast<int>(e.description().size()), e.description().data());
            return -1;
        }
        walker w{fn, ctx};
        return walk(w, "", r.table(), 0);
    } catch (const std::bad_alloc &) {
        return -2;
    } catch (...) {
        if (err && cap)
            std::snprintf(err, cap, "line 0, column 0: the TOML reader failed");
        return -1;
    }
}
