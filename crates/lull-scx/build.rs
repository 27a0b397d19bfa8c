// Compiles the BPF side with clang (BPF_CLANG, else `clang`; .cargo/config.toml names
// Debian's clang-19) against the sched_ext headers and vmlinux.h that scx_cargo bundles, and
// generates its libbpf skeleton into OUT_DIR.
fn main() {
    scx_cargo::BpfBuilder::new()
        .expect("scx_cargo: no usable clang (install clang-19, or set BPF_CLANG)")
        .enable_skel("src/bpf/main.bpf.c", "bpf")
        .build()
        .expect("scx_cargo: building the BPF side failed");
}
