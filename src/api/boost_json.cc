// Boost.JSON is used header-only (Debian ships no libboost_json in the build packages); its
// implementation is compiled once, here, for the whole program.
#include <boost/json/src.hpp>
