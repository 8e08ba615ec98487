#!/usr/bin/env python3
"""Writes Sources/LazyLibraries: the FFmpeg and SDL2 functions tipipe calls, bound on their first call.

A process that links libavcodec, libavformat, libavutil, libswresample, libswscale and SDL2 loads about
120 more shared libraries at start (codecs, X11, PulseAudio, ...): ~25 ms of every run, whatever the
command does. Instead each function tipipe calls is a stub here (as Implib.so makes them): its first call
`dlopen`s its library and looks it up, later calls jump straight to it. `tipipe --help`, `token`, `list`,
`serve` or `bench fetch` never load them (an export does: its demuxer reads picture sizes with libavcodec's
parser and its MP4 header comes from libavformat). The stubs are hidden: the executable does not offer them
to the libraries it loads (a release build exports its symbols), which call each other directly.

    python3 scripts/lazy-libraries.py          # rewrite the sources from Sources/LazyLibraries/symbols.txt
    python3 scripts/lazy-libraries.py --scan   # first list what the built objects call (debug and release
                                               # builds of the package, tests included), then rewrite

A call of a function that is not listed fails to link ("undefined reference"): run `--scan` after a build
that failed that way... which cannot build. So `--scan` also reads the Swift sources for libav*/SDL_
names it can find in the libraries, which covers a new call before its first build.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "Sources", "LazyLibraries")
LIBRARIES = [
    "libavcodec.so.59",
    "libavformat.so.59",
    "libavutil.so.57",
    "libswresample.so.4",
    "libswscale.so.6",
    "libSDL2-2.0.so.0",
]
LIBDIR = "/usr/lib/x86_64-linux-gnu"


def exported():
    """name -> library for every function the libraries export."""
    names = {}
    for library in LIBRARIES:
        listing = subprocess.run(
            ["nm", "-D", "--defined-only", os.path.join(LIBDIR, library)], capture_output=True, text=True, check=True
        ).stdout
        for line in listing.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in ("T", "W", "i"):
                names.setdefault(parts[2].split("@")[0], library)
    return names


def scan(names):
    used = set()
    build = os.path.join(ROOT, ".build")
    objects = []
    for directory, _, files in os.walk(build):
        objects += [os.path.join(directory, f) for f in files if f.endswith(".o")]
    for start in range(0, len(objects), 200):
        listing = subprocess.run(["nm", "-u"] + objects[start:start + 200], capture_output=True, text=True).stdout
        used.update(parts[1] for parts in (line.split() for line in listing.splitlines()) if len(parts) == 2)
    pattern = re.compile(r"\b((?:av|avcodec|avformat|avio|swr|sws|SDL)_[A-Za-z0-9_]+)\s*\(")
    for base in ("Sources", "Tests", "Benchmarks", "Examples"):
        for directory, _, files in os.walk(os.path.join(ROOT, base)):
            for name in files:
                if name.endswith((".swift", ".h")):
                    with open(os.path.join(directory, name), encoding="utf-8") as source:
                        used.update(pattern.findall(source.read()))
    return sorted(name for name in used if name in names)


VERSION_MACROS = {
    "libavcodec": ("libavcodec/version.h", "LIBAVCODEC_VERSION_MAJOR"),
    "libavformat": ("libavformat/version.h", "LIBAVFORMAT_VERSION_MAJOR"),
    "libavutil": ("libavutil/version.h", "LIBAVUTIL_VERSION_MAJOR"),
    "libswresample": ("libswresample/version.h", "LIBSWRESAMPLE_VERSION_MAJOR"),
    "libswscale": ("libswscale/version.h", "LIBSWSCALE_VERSION_MAJOR"),
    "libSDL2-2.0": ("SDL2/SDL_version.h", None),
}


def x86_64(symbols):
    asm = ["#if defined(__x86_64__)", "    .text"]
    for index, (name, _) in enumerate(symbols):
        asm += [
            f"    .globl {name}",
            f"    .hidden {name}",
            f"    .type {name}, @function",
            f"{name}:",
            "    .cfi_startproc",
            f"    jmp *tipipe_lazy_table+{8 * index}(%rip)",
            "    .cfi_endproc",
            f"    .size {name}, .-{name}",
            f"    .globl tipipe_lazy_thunk_{index}",
            f"    .hidden tipipe_lazy_thunk_{index}",
            f"    .type tipipe_lazy_thunk_{index}, @function",
            f"tipipe_lazy_thunk_{index}:",
            "    .cfi_startproc",
            f"    pushq ${index}",
            "    .cfi_adjust_cfa_offset 8",
            "    jmp tipipe_lazy_enter",
            "    .cfi_endproc",
        ]
    asm += ["    .type tipipe_lazy_enter, @function", "tipipe_lazy_enter:", "    .cfi_startproc",
            "    .cfi_def_cfa_offset 16"]
    for register in ["rdi", "rsi", "rdx", "rcx", "r8", "r9", "rax", "r10"]:
        asm += [f"    pushq %{register}", "    .cfi_adjust_cfa_offset 8"]
    asm += ["    subq $128, %rsp", "    .cfi_adjust_cfa_offset 128"]
    asm += [f"    movdqu %xmm{i}, {16 * i}(%rsp)" for i in range(8)]
    asm += ["    movq 192(%rsp), %rdi", "    call tipipe_lazy_resolve", "    movq %rax, %r11"]
    asm += [f"    movdqu {16 * i}(%rsp), %xmm{i}" for i in range(8)]
    asm += ["    addq $128, %rsp", "    .cfi_adjust_cfa_offset -128"]
    for register in ["r10", "rax", "r9", "r8", "rcx", "rdx", "rsi", "rdi"]:
        asm += [f"    popq %{register}", "    .cfi_adjust_cfa_offset -8"]
    asm += ["    addq $8, %rsp", "    .cfi_adjust_cfa_offset -8", "    jmp *%r11", "    .cfi_endproc",
            "    .size tipipe_lazy_enter, .-tipipe_lazy_enter"]
    return asm


def aarch64(symbols):
    # x16 and x17 are the intra-procedure-call scratch registers: a stub may use them, no argument is in
    # them. x8 carries the address of a returned struct.
    asm = ["#elif defined(__aarch64__)", "    .text"]
    for index, (name, _) in enumerate(symbols):
        asm += [
            f"    .globl {name}",
            f"    .hidden {name}",
            f"    .type {name}, %function",
            f"{name}:",
            "    .cfi_startproc",
            "    adrp x16, tipipe_lazy_table",
            "    add x16, x16, :lo12:tipipe_lazy_table",
            f"    ldr x17, [x16, #{8 * index}]",
            "    br x17",
            "    .cfi_endproc",
            f"    .size {name}, .-{name}",
            f"    .globl tipipe_lazy_thunk_{index}",
            f"    .hidden tipipe_lazy_thunk_{index}",
            f"    .type tipipe_lazy_thunk_{index}, %function",
            f"tipipe_lazy_thunk_{index}:",
            "    .cfi_startproc",
            f"    mov x17, #{index}",
            "    b tipipe_lazy_enter",
            "    .cfi_endproc",
        ]
    asm += [
        "    .type tipipe_lazy_enter, %function",
        "tipipe_lazy_enter:",
        "    .cfi_startproc",
        "    stp x29, x30, [sp, #-16]!",
        "    .cfi_def_cfa_offset 16",
        "    .cfi_offset x29, -16",
        "    .cfi_offset x30, -8",
        "    mov x29, sp",
        "    stp x0, x1, [sp, #-16]!",
        "    stp x2, x3, [sp, #-16]!",
        "    stp x4, x5, [sp, #-16]!",
        "    stp x6, x7, [sp, #-16]!",
        "    stp x8, x17, [sp, #-16]!",
        "    stp q0, q1, [sp, #-32]!",
        "    stp q2, q3, [sp, #-32]!",
        "    stp q4, q5, [sp, #-32]!",
        "    stp q6, q7, [sp, #-32]!",
        "    .cfi_def_cfa_offset 224",
        "    mov x0, x17",
        "    bl tipipe_lazy_resolve",
        "    mov x16, x0",
        "    ldp q6, q7, [sp], #32",
        "    ldp q4, q5, [sp], #32",
        "    ldp q2, q3, [sp], #32",
        "    ldp q0, q1, [sp], #32",
        "    ldp x8, x17, [sp], #16",
        "    ldp x6, x7, [sp], #16",
        "    ldp x4, x5, [sp], #16",
        "    ldp x2, x3, [sp], #16",
        "    ldp x0, x1, [sp], #16",
        "    ldp x29, x30, [sp], #16",
        "    .cfi_def_cfa_offset 0",
        "    br x16",
        "    .cfi_endproc",
        "    .size tipipe_lazy_enter, .-tipipe_lazy_enter",
    ]
    return asm


def write(symbols):
    libraries = [library for library in LIBRARIES if any(lib == library for _, lib in symbols)]
    asm = [
        "// Generated by scripts/lazy-libraries.py from symbols.txt: do not edit.",
        "// Each function is a stub (hidden: the executable does not offer it to the libraries it loads) that",
        "// jumps through its slot of tipipe_lazy_table; a slot first points at its thunk, which passes the",
        "// function's number to tipipe_lazy_enter: that saves every argument register, asks",
        "// tipipe_lazy_resolve for the address (it fills the slot), restores them and jumps there, as if the",
        "// caller had called it directly.",
    ]
    asm += x86_64(symbols) + aarch64(symbols)
    asm += [
        "#else",
        "#error \"the lazily bound FFmpeg and SDL2 stubs exist for x86_64 and aarch64 (scripts/lazy-libraries.py)\"",
        "#endif",
        "    .section .note.GNU-stack,\"\",%progbits",
        "",
    ]
    table = [
        "// Generated by scripts/lazy-libraries.py from symbols.txt: do not edit.",
        "// The functions stubs.S binds on first call: their names, their libraries, and their slots.",
        "#include \"table.h\"",
        "",
        "// The headers the code was compiled against must be those of the libraries loaded by name here.",
    ]
    for library in libraries:
        stem, _, major = library.partition(".so.")
        header, macro = VERSION_MACROS[stem]
        table.append(f"#include <{header}>")
        if macro:
            table += [f"#if {macro} != {major}", f"#error \"{library} is loaded by name, but {header} is of another version\"", "#endif"]
        else:
            table += ["#if SDL_MAJOR_VERSION != 2", f"#error \"{library} is loaded by name, but the SDL headers are not SDL2\"", "#endif"]
    table.append("")
    table += [f"extern void tipipe_lazy_thunk_{index}(void);" for index in range(len(symbols))]
    table += [
        "",
        f"const int tipipe_lazy_count = {len(symbols)};",
        "const char *const tipipe_lazy_libraries[] = {",
    ]
    table += [f"  \"{library}\"," for library in libraries]
    table += ["};", f"const int tipipe_lazy_library_count = {len(libraries)};", "", "const struct tipipe_lazy_function tipipe_lazy_functions[] = {"]
    table += [f"  {{\"{name}\", {libraries.index(library)}}}," for name, library in symbols]
    table += ["};", "", "void *tipipe_lazy_table[] = {"]
    table += [f"  (void *)tipipe_lazy_thunk_{index}," for index in range(len(symbols))]
    table += ["};", ""]
    with open(os.path.join(OUT, "stubs.S"), "w") as output:
        output.write("\n".join(asm))
    with open(os.path.join(OUT, "table.c"), "w") as output:
        output.write("\n".join(table))


def main():
    names = exported()
    listed = os.path.join(OUT, "symbols.txt")
    if "--scan" in sys.argv:
        symbols = scan(names)
        with open(listed, "w") as output:
            output.write("# The FFmpeg and SDL2 functions tipipe calls (scripts/lazy-libraries.py --scan): name library\n")
            output.writelines(f"{name} {names[name]}\n" for name in symbols)
    with open(listed) as source:
        symbols = [tuple(line.split()) for line in source if line.strip() and not line.startswith("#")]
    missing = [name for name, _ in symbols if name not in names]
    if missing:
        sys.exit("not exported by the libraries: " + ", ".join(missing))
    write(symbols)
    print(f"{len(symbols)} functions of {len({lib for _, lib in symbols})} libraries")


if __name__ == "__main__":
    main()
