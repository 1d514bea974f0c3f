#pragma once
// The instruction-set level generated kernels are compiled for, chosen at run time from what the
// CPU reports (never assumed): AVX-512 (x86-64-v4), AVX2 + FMA (x86-64-v3), or the baseline.
// EMBER_CPU_ISA=baseline|avx2|avx512 lowers it (never raises it above what the CPU has).
namespace ember::cpu::jit {

enum class Isa { kBaseline, kAvx2, kAvx512 };

/// What this CPU supports, capped by EMBER_CPU_ISA.
Isa host_isa();
/// "baseline", "avx2", "avx512".
const char* isa_name(Isa isa);
/// The widest vector the level has, in bytes (16, 32, 64): what a renderer picks widths from.
int isa_vector_bytes(Isa isa);
/// The compiler flag selecting the level ("-march=x86-64-v3"); "" where none is needed.
const char* isa_march_flag(Isa isa);
/// "x86_64", "aarch64", ...: the machine part of the cache's target name.
const char* machine_name();

}  // namespace ember::cpu::jit
