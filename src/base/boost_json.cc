// Boost.JSON is used header-only (Debian ships no libboost_json in the build packages): its
// implementation is compiled once, here, for the whole program. No other file may include
// <boost/json/src.hpp>; link xb_boost_json instead.
#include <boost/json/src.hpp>
