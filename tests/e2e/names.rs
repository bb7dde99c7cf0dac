// SPDX-License-Identifier: LGPL-2.1-or-later
// Rust workload for tests/e2e/test-demangle.sh, built once with legacy
// and once with v0 symbol mangling: a method of a generic struct's impl in
// a module.  churn() calls abort() on a path never taken, so that it keeps
// a frame.  Argument: seconds to run.
use std::time::Instant;

mod engine {
    pub struct Mixer<T> {
        pub k: T,
    }
    impl Mixer<u64> {
        #[inline(never)]
        pub fn churn(&self, mut x: u64, n: u64) -> u64 {
            for i in 0..n {
                x = (x ^ (x >> 7)).wrapping_mul(self.k ^ i);
                if x == 42 {
                    std::process::abort();
                }
            }
            x
        }
    }
}

fn main() {
    let secs: f64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(1.0);
    let m = engine::Mixer { k: 0x9E3779B97F4A7C15u64 };
    let t0 = Instant::now();
    let mut s = 1u64;
    while t0.elapsed().as_secs_f64() < secs {
        s = s.wrapping_add(m.churn(s, 100000));
    }
    println!("{}", s);
}
