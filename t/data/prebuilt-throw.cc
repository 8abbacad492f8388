// C++ that throws and catches in normal operation, built without the
// runtime, for t/prebuilt.t.
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

struct Guard {
    int *count;
    ~Guard() { ++*count; }
};

__attribute__((noinline)) int parse(const std::string &s, int *dtors)
{
    Guard g{ dtors };
    if (s.empty() || s[0] == '!')
        throw std::invalid_argument("bad: " + s);
    return (int)s.size();
}

__attribute__((noinline)) int total(const std::vector<std::string> &v, int *dtors, int *errors)
{
    int t = 0;
    for (const auto &s : v) {
        try {
            t += parse(s, dtors);
        } catch (const std::exception &e) {
            ++*errors;
        }
    }
    return t;
}

int main()
{
    std::vector<std::string> v;
    for (int i = 0; i < 300; i++)
        v.push_back(i % 3 == 0 ? "!" + std::to_string(i) : std::string(i % 7 + 1, 'a'));
    int dtors = 0, errors = 0;
    int t = total(v, &dtors, &errors);
    std::printf("total %d errors %d dtors %d\n", t, errors, dtors);
    return 0;
}
