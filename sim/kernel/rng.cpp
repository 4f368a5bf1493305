#include "sim/kernel/rng.hpp"

#include "model/assert.hpp"
#include "model/result.hpp"

namespace rehearse::sim {
namespace {

constexpr std::uint64_t rotl(std::uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }

// 64 x 64 -> 128-bit product. __extension__ keeps -Wpedantic quiet about the
// GNU 128-bit type, which every compiler we build with has.
__extension__ using Uint128 = unsigned __int128;

std::uint64_t fnv1a64(std::string_view bytes) noexcept {
  std::uint64_t hash = 14695981039346656037ull;
  for (const char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ull;
  }
  return hash;
}

}  // namespace

std::uint64_t SplitMix64::next() noexcept {
  std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

Rng::Rng(std::uint64_t seed) noexcept : seed_(seed) {
  SplitMix64 expander(seed);
  for (auto& word : s_) word = expander.next();
  // SplitMix64 is a bijection of its counter, and four consecutive outputs
  // cannot all be zero, so the state is never the all-zero fixed point.
  REHEARSE_ASSERT((s_[0] | s_[1] | s_[2] | s_[3]) != 0);
}

Rng Rng::from_state(const State& state) noexcept {
  REHEARSE_ASSERT((state[0] | state[1] | state[2] | state[3]) != 0);
  Rng rng;
  rng.s_ = state;
  return rng;
}

std::uint64_t Rng::next_u64() noexcept {
  const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const std::uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  // The step is a bijection on non-zero states: it never reaches the fixed point.
  REHEARSE_ASSERT((s_[0] | s_[1] | s_[2] | s_[3]) != 0);
  return result;
}

std::uint64_t Rng::next_below(std::uint64_t bound) noexcept {
  REHEARSE_ASSERT(bound >= 1);
  Uint128 product = static_cast<Uint128>(next_u64()) * bound;
  auto low = static_cast<std::uint64_t>(product);
  if (low < bound) {
    // threshold = 2^64 mod bound, computed in 64 bits as (-bound) mod bound.
    const std::uint64_t threshold = (0 - bound) % bound;
    while (low < threshold) {
      product = static_cast<Uint128>(next_u64()) * bound;
      low = static_cast<std::uint64_t>(product);
    }
  }
  // Lemire's method: the high word of x * bound is below bound.
  const auto drawn = static_cast<std::uint64_t>(product >> 64);
  REHEARSE_ASSERT_LT(drawn, bound);
  return drawn;
}

std::int64_t Rng::next_in(std::int64_t lo, std::int64_t hi) noexcept {
  REHEARSE_ASSERT(lo <= hi);
  // Width in unsigned arithmetic (wraps to 0 only for the full 64-bit range).
  const std::uint64_t span = static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo) + 1;
  const std::uint64_t offset = span == 0 ? next_u64() : next_below(span);
  const auto drawn = static_cast<std::int64_t>(static_cast<std::uint64_t>(lo) + offset);
  REHEARSE_ASSERT_GE(drawn, lo);
  REHEARSE_ASSERT_LE(drawn, hi);
  return drawn;
}

bool Rng::next_bool(double p) noexcept {
  const double u = next_unit();
  REHEARSE_ASSERT(u >= 0.0 && u < 1.0);  // next_unit's range: p <= 0 never, p >= 1 always
  return u < p;
}

void Rng::jump() noexcept {
  static constexpr std::uint64_t kJump[] = {0x180ec6d33cfd0aba, 0xd5a61266f0c9392c,
                                            0xa9582618e03fc9aa, 0x39abdc4529b1661c};
  State acc{};
  for (const std::uint64_t word : kJump) {
    for (int b = 0; b < 64; ++b) {
      if (word & (std::uint64_t{1} << b)) {
        for (std::size_t i = 0; i < acc.size(); ++i) acc[i] ^= s_[i];
      }
      next_u64();
    }
  }
  // The jump polynomial maps a non-zero state to a non-zero one.
  REHEARSE_ASSERT((acc[0] | acc[1] | acc[2] | acc[3]) != 0);
  s_ = acc;
}

Rng Rng::derive(std::uint64_t stream_id) const noexcept {
  // One SplitMix64 step over (seed, stream id): distinct ids give unrelated
  // seeds, and the parent's draws so far play no part.
  SplitMix64 mixer(seed_ ^ rotl(stream_id * 0xd1342543de82ef95ull, 17));
  return Rng(mixer.next());
}

Rng Rng::derive(std::string_view stream_name) const noexcept {
  return derive(fnv1a64(stream_name));
}

}  // namespace rehearse::sim
