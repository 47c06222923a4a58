// Expected<T, E>: the one result type for an operation that yields a T or fails with an E (a
// Status, a StoreError, a parse rejection...). [[nodiscard]], so a dropped failure does not
// compile; unpacked with ok()/value()/error() or the XB_TRY macros below, never with std::get.
//
// Expected<void, E> is the "nothing or an error" form. Result<T> (base/status.h) is
// Expected<T, Status>. value() on a failure and error() on a success are broken invariants and
// crash (XB_CHECK-style abort), as std::get would throw.
#pragma once

#include <concepts>
#include <cstdlib>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>

namespace xb {

namespace expected_detail {
[[noreturn]] inline void BadAccess() { std::abort(); }
}  // namespace expected_detail

template <typename T, typename E>
class [[nodiscard]] Expected {
  static_assert(!std::is_same_v<T, E>, "value and error types must differ");

 public:
  using value_type = T;
  using error_type = E;

  Expected(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit
  Expected(E error) : v_(std::in_place_index<1>, std::move(error)) {}  // NOLINT: implicit
  // Converts from a value convertible to T (a string literal for std::string, a derived pointer).
  template <typename U>
  requires(std::is_convertible_v<U&&, T> && !std::is_same_v<std::remove_cvref_t<U>, T> &&
           !std::is_convertible_v<U&&, E>) Expected(U&& value)  // NOLINT: implicit
      : v_(std::in_place_index<0>, T(std::forward<U>(value))) {}

  bool ok() const { return v_.index() == 0; }

  T& value() & { return *Checked(std::get_if<0>(&v_)); }
  const T& value() const& { return *Checked(std::get_if<0>(&v_)); }
  T&& value() && { return std::move(*Checked(std::get_if<0>(&v_))); }

  E& error() & { return *Checked(std::get_if<1>(&v_)); }
  const E& error() const& { return *Checked(std::get_if<1>(&v_)); }
  E&& error() && { return std::move(*Checked(std::get_if<1>(&v_))); }

  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  // The value, or `fallback` on a failure.
  T value_or(T fallback) const& { return ok() ? value() : std::move(fallback); }

  // For Result<T>: the error, or a shared OK status on a success.
  const E& status() const requires requires { E::Ok(); }
  {
    static const E kOk = E::Ok();
    return ok() ? kOk : error();
  }

 private:
  template <typename P>
  static P* Checked(P* p) {
    if (p == nullptr) {
      expected_detail::BadAccess();
    }
    return p;
  }

  std::variant<T, E> v_;
};

// Success carries nothing; a failure carries an E.
template <typename E>
class [[nodiscard]] Expected<void, E> {
 public:
  using value_type = void;
  using error_type = E;

  Expected() = default;
  Expected(E error) : error_(std::move(error)) {}  // NOLINT: implicit

  static Expected Ok() { return Expected(); }

  bool ok() const { return !error_.has_value(); }
  void value() const {
    if (!ok()) {
      expected_detail::BadAccess();
    }
  }
  E& error() & { return *Checked(); }
  const E& error() const& { return *Checked(); }
  E&& error() && { return std::move(*Checked()); }

 private:
  E* Checked() const {
    if (!error_.has_value()) {
      expected_detail::BadAccess();
    }
    return const_cast<E*>(&*error_);
  }

  std::optional<E> error_;
};

}  // namespace xb

#define XB_TRY_CONCAT_INNER(a, b) a##b
#define XB_TRY_CONCAT(a, b) XB_TRY_CONCAT_INNER(a, b)

// `XB_TRY(auto rows, ReadRows());` declares `rows` from the value, or returns the error from the
// enclosing function (whose result type must be constructible from it). Statement-level only.
#define XB_TRY(lhs, expr)                                       \
  auto XB_TRY_CONCAT(xb_try_, __LINE__) = (expr);               \
  if (!XB_TRY_CONCAT(xb_try_, __LINE__).ok()) {                 \
    return std::move(XB_TRY_CONCAT(xb_try_, __LINE__)).error(); \
  }                                                             \
  lhs = std::move(XB_TRY_CONCAT(xb_try_, __LINE__)).value()

// `XB_TRY_VOID(Exec(...));` returns the error of a failed Expected, discards a value otherwise.
#define XB_TRY_VOID(expr)                        \
  do {                                           \
    auto xb_try_void_tmp = (expr);               \
    if (!xb_try_void_tmp.ok()) {                 \
      return std::move(xb_try_void_tmp).error(); \
    }                                            \
  } while (0)

// The same in a coroutine (boost::asio::awaitable<Expected<...>>): co_return instead of return.
// `expr` may contain co_await.
#define XB_TRY_CO(lhs, expr)                                       \
  auto XB_TRY_CONCAT(xb_try_, __LINE__) = (expr);                  \
  if (!XB_TRY_CONCAT(xb_try_, __LINE__).ok()) {                    \
    co_return std::move(XB_TRY_CONCAT(xb_try_, __LINE__)).error(); \
  }                                                                \
  lhs = std::move(XB_TRY_CONCAT(xb_try_, __LINE__)).value()

#define XB_TRY_VOID_CO(expr)                        \
  do {                                              \
    auto xb_try_void_tmp = (expr);                  \
    if (!xb_try_void_tmp.ok()) {                    \
      co_return std::move(xb_try_void_tmp).error(); \
    }                                               \
  } while (0)
