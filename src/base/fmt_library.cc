// SPDX-License-Identifier: Apache-2.0
// fmt's compiled part, built into gpuq instead of loaded from libfmt.so (every
// `gpuq` command pays the dynamic loader for each shared library it needs, and libfmt.so also
// pulls in the shared C++ runtime). The other files include <fmt/format.h> without
// FMT_HEADER_ONLY, exactly as they did against libfmt.so, so they keep fmt's out-of-line
// functions out of their own object code; this file is the one place that defines them:
// format-inl.h holds the definitions, and the explicit instantiations below are the templates
// format.h declares `extern` or leaves undefined for a compiled fmt.
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {

template FMT_API auto dragonbox::to_decimal(float x) noexcept -> dragonbox::decimal_fp<float>;
template FMT_API auto dragonbox::to_decimal(double x) noexcept -> dragonbox::decimal_fp<double>;

template FMT_API locale_ref::locale_ref(const std::locale& loc);
template FMT_API auto locale_ref::get<std::locale>() const -> std::locale;

template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<char>;
template FMT_API auto decimal_point_impl(locale_ref) -> char;
template FMT_API void buffer<char>::append(const char*, const char*);
template FMT_API void vformat_to(buffer<char>&, string_view,
                                 basic_format_args<FMT_BUFFER_CONTEXT(char)>, locale_ref);

template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<wchar_t>;
template FMT_API auto decimal_point_impl(locale_ref) -> wchar_t;
template FMT_API void buffer<wchar_t>::append(const wchar_t*, const wchar_t*);

}  // namespace detail
FMT_END_NAMESPACE
