#!/usr/bin/env python3
"""Regenerate the instruction-byte table of tests/unit/test_decode.c.

Each case is assembled with GNU as (Intel syntax): `junk` raw bytes, then
`before` (the instructions that ran before the sample), then `at` (the
instruction at the sampled IP and what follows it).  IP is the first byte of
`at`.  The expected address is a C expression over the test's register
values (RAX, RBX, ...; CODE is the address the window is placed at).
Usage: python3 gen_cases.py > cases.inc, then paste into test_decode.c.
"""
import os, subprocess, tempfile, textwrap

# name, junk bytes, before, at, lookback, flags, rc, reason, back,
# [(addr expr, size, rw)]
CASES = [
    ("load mov rax,[rbx+rcx*8+16]", b"", ["mov rax, [rbx+rcx*8+16]"],
     ["add rdx, rax"], 4, "0", 1, "OK", 1, [("RBX + RCX * 8 + 16", 8, "R")]),
    ("load at IP (not yet run)", b"", ["add rdx, 1"],
     ["mov rax, [rbx+rcx*8+16]"], 4, "0", 1, "OK", 0,
     [("RBX + RCX * 8 + 16", 8, "R")]),
    ("store mov [rdi],eax", b"", ["mov [rdi], eax"], ["inc ecx"],
     4, "0", 1, "OK", 1, [("RDI", 4, "W")]),
    ("store byte imm", b"", ["mov byte ptr [rdi+r8*2-3], 5"], ["inc ecx"],
     4, "0", 1, "OK", 1, [("RDI + R8 * 2 - 3", 1, "W")]),
    ("rmw add [rsi+4],eax", b"", ["add [rsi+4], eax"], ["inc ecx"],
     4, "0", 1, "OK", 1, [("RSI + 4", 4, "RW")]),
    ("rmw lock xadd [rdi+8],ecx", b"", ["lock xadd [rdi+8], ecx"],
     ["inc edx"], 4, "0", 1, "OK", 1, [("RDI + 8", 4, "RW")]),
    ("rmw lock cmpxchg (capstone says read)", b"",
     ["lock cmpxchg [r9], rcx"], ["inc edx"], 4, "0", 1, "OK", 1,
     [("R9", 8, "RW")]),
    ("rmw inc dword [rdx]", b"", ["inc dword ptr [rdx]"], ["inc ecx"],
     4, "0", 1, "OK", 1, [("RDX", 4, "RW")]),
    ("cmp [rdi],rax is a read", b"", ["cmp [rdi], rax"], ["jne .+10"],
     4, "0", 1, "OK", 1, [("RDI", 8, "R")]),
    ("simd movdqu xmm0,[rax]", b"", ["movdqu xmm0, [rax]"],
     ["paddd xmm1, xmm0"], 4, "0", 1, "OK", 1, [("RAX", 16, "R")]),
    ("simd vmovapd ymm1,[rdx+rcx*8]", b"", ["vmovapd ymm1, [rdx+rcx*8]"],
     ["vaddpd ymm2, ymm2, ymm1"], 4, "0", 1, "OK", 1,
     [("RDX + RCX * 8", 32, "R")]),
    ("simd store vmovdqu [rdi],ymm0 (capstone says read)", b"",
     ["vmovdqu [rdi], ymm0"], ["add rdi, 32"], 4, "0", 1, "OK", 1,
     [("RDI", 32, "W")]),
    ("simd store movups [rdi+rsi],xmm0; add rsi,16 undone", b"",
     ["movups [rdi+rsi], xmm0", "add rsi, 16"], ["cmp rsi, rdx"], 4, "0",
     1, "OK", 2, [("RDI + RSI - 16", 16, "W")]),
    ("simd store movups [rdi+rsi] at IP", b"", ["add rsi, 16"],
     ["movups [rdi+rsi], xmm0"], 4, "0", 1, "OK", 0,
     [("RDI + RSI", 16, "W")]),
    ("movnti store", b"", ["movnti [r10], rax"], ["sfence"], 4, "0",
     1, "OK", 1, [("R10", 8, "W")]),
    ("x87 fstp store", b"", ["fstp qword ptr [r11+8]"], ["fld1"], 4, "0",
     1, "OK", 1, [("R11 + 8", 8, "W")]),
    ("gather vpgatherdd rejected", b"",
     ["vpgatherdd xmm0, [rax+xmm1*4], xmm2"], ["inc ecx"], 4, "0",
     0, "VSIB", 0, []),
    ("scatter vpscatterdd rejected", b"",
     ["vpscatterdd [rax+zmm1*4]{k1}, zmm0"], ["inc ecx"], 4, "0",
     0, "VSIB", 0, []),
    ("string rep movsb at IP: dst and src", b"", ["mov ecx, 100"],
     ["rep movsb"], 4, "0", 1, "OK", 0,
     [("RDI", 1, "W"), ("RSI", 1, "R")]),
    ("string rep movsb before IP: rsi/rdi advanced", b"", ["rep movsb"],
     ["add eax, 1"], 4, "0", 0, "CLOBBERED", 0, []),
    ("string stosq at IP", b"", ["add eax, 1"], ["stosq"], 4, "0",
     1, "OK", 0, [("RDI", 8, "W")]),
    ("string repe cmpsb at IP: two reads", b"", ["add eax, 1"],
     ["repe cmpsb"], 4, "0", 1, "OK", 0, [("RSI", 1, "R"), ("RDI", 1, "R")]),
    ("string lodsd at IP", b"", ["add ecx, 1"], ["lodsd"], 4, "0",
     1, "OK", 0, [("RSI", 4, "R")]),
    ("rip-relative rejected", b"", ["mov rax, [rip+0x100]"],
     ["add rdx, rax"], 4, "0", 0, "RIP_RELATIVE", 0, []),
    ("rip-relative kept with flag", b"", ["mov rax, [rip+0x100]"],
     ["add rdx, rax"], 4, "CM_DECODE_KEEP_RIP", 1, "OK", 1,
     [("CODE + 7 + 0x100", 8, "R")]),
    ("fs: TLS rejected", b"", ["mov rax, fs:[0x28]"], ["add rdx, rax"],
     4, "0", 0, "SEGMENT", 0, []),
    ("gs:[rbx] rejected", b"", ["mov rax, gs:[rbx]"], ["add rdx, rax"],
     4, "0", 0, "SEGMENT", 0, []),
    ("rsp-based rejected", b"", ["mov rax, [rsp+8]"], ["add rdx, rax"],
     4, "0", 0, "STACK", 0, []),
    ("rbp-based rejected", b"", ["mov rax, [rbp-8]"], ["add rdx, rax"],
     4, "0", 0, "STACK", 0, []),
    ("rsp-based kept with flag", b"", ["mov rax, [rsp+8]"],
     ["add rdx, rax"], 4, "CM_DECODE_KEEP_STACK", 1, "OK", 1,
     [("RSP + 8", 8, "R")]),
    ("stack skipped, older heap access used", b"",
     ["mov rdx, [r12+16]", "mov rax, [rsp+8]"], ["add rdx, rax"], 4, "0",
     1, "OK", 2, [("R12 + 16", 8, "R")]),
    ("lea has no access", b"", ["lea rax, [rbx+8]"], ["add rdx, rax"],
     4, "0", 0, "NO_MEM", 0, []),
    ("nop with memory operand", b"", ["nop word ptr [rax+rax*1]"],
     ["add rdx, rax"], 4, "0", 0, "NO_MEM", 0, []),
    ("prefetch is no access", b"", ["prefetcht0 [rdi]"], ["add rdx, rax"],
     4, "0", 0, "NO_MEM", 0, []),
    ("own base overwritten: mov rax,[rax]", b"",
     ["mov rax, [rax]", "add rbx, 1"], ["add rdx, rax"], 4, "0",
     0, "CLOBBERED", 0, []),
    ("own base overwritten, older usable one taken", b"",
     ["mov rdx, [rsi]", "mov rax, [rax]", "add rbx, 1"], ["add rdx, rax"],
     4, "0", 1, "OK", 3, [("RSI", 8, "R")]),
    ("index moved later: inc rcx undone", b"",
     ["add rax, [rdi+rcx*8]", "inc rcx"], ["cmp rcx, rsi"], 4, "0",
     1, "OK", 2, [("RDI + (RCX - 1) * 8", 8, "R")]),
    ("pointer bumps undone: add rdi,8; lea rsi,[rsi-4]; dec r9", b"",
     ["mov rax, [rdi+rsi*2]", "add rdi, 8", "lea rsi, [rsi-4]", "dec r9"],
     ["jne .-20"], 4, "0", 1, "OK", 4, [("RDI - 8 + (RSI + 4) * 2", 8, "R")]),
    ("sub rdi,24 undone, stores", b"", ["mov [rdi], rax", "sub rdi, 24"],
     ["cmp rdi, rsi"], 4, "0", 1, "OK", 2, [("RDI + 24", 8, "W")]),
    ("32-bit inc ecx is not undone", b"",
     ["add eax, [rdi+rcx*4]", "inc ecx"], ["cmp ecx, esi"], 4, "0",
     0, "CLOBBERED", 0, []),
    ("bump then overwrite: clobbered", b"",
     ["mov rax, [rdi]", "mov rdi, rdx", "add rdi, 8"], ["cmp rdi, rsi"],
     4, "0", 0, "CLOBBERED", 0, []),
    ("lea with index is not a bump", b"",
     ["mov rax, [rdi]", "lea rdi, [rdi+rcx*8]"], ["cmp rdi, rsi"],
     4, "0", 0, "CLOBBERED", 0, []),
    ("sub-register write clobbers: mov bl,1", b"",
     ["mov rax, [rbx]", "mov bl, 1"], ["add rdx, rax"], 4, "0",
     0, "CLOBBERED", 0, []),
    ("32-bit write clobbers: mov ebx,1", b"",
     ["mov rax, [rbx]", "mov ebx, 1"], ["add rdx, rax"], 4, "0",
     0, "CLOBBERED", 0, []),
    ("look-back 4 reaches 4th", b"",
     ["mov rax, [rbx]", "add rcx, 1", "add rcx, 1", "add rcx, 1"],
     ["add rdx, rax"], 4, "0", 1, "OK", 4, [("RBX", 8, "R")]),
    ("look-back 4 stops before 5th", b"",
     ["mov rax, [rbx]", "add rcx, 1", "add rcx, 1", "add rcx, 1",
      "add rcx, 1"], ["add rdx, rax"], 4, "0", 0, "NO_MEM", 0, []),
    ("look-back 5 reaches 5th", b"",
     ["mov rax, [rbx]", "add rcx, 1", "add rcx, 1", "add rcx, 1",
      "add rcx, 1"], ["add rdx, rax"], 5, "0", 1, "OK", 5, [("RBX", 8, "R")]),
    ("look-back 0: only the instruction at IP", b"", ["mov rax, [rbx]"],
     ["add rdx, rax"], 0, "0", 0, "NO_MEM", 0, []),
    ("call is a barrier", b"", ["mov rax, [rbx]", "call .+0x100"],
     ["add rdx, rax"], 4, "0", 0, "NO_MEM", 0, []),
    ("jmp is a barrier", b"", ["mov rax, [rbx]", "jmp .+0x100"],
     ["add rdx, rax"], 4, "0", 0, "NO_MEM", 0, []),
    ("conditional jump is crossed", b"", ["mov rax, [rbx]", "jne .+0x100"],
     ["add rdx, rax"], 4, "0", 1, "OK", 2, [("RBX", 8, "R")]),
    ("32-bit address wraps", b"", ["mov eax, [ecx+r8d]"], ["add edx, eax"],
     4, "0", 1, "OK", 1, [("(uint32_t)(RCX + R8)", 4, "R")]),
    ("absolute address, no register", b"", ["mov eax, dword ptr [0x601040]"],
     ["add edx, eax"], 4, "0", 1, "OK", 1, [("0x601040", 4, "R")]),
    # tail of "movabs rax, imm64" (48 b8 + 8 bytes): window starts mid-insn
    ("sync: window starts inside an instruction",
     bytes.fromhex("11223344556677") + b"\x48\xb8" + bytes(range(0xf0, 0xf8)),
     ["mov rsi, [r13+r14*4+0x40]", "add rcx, 1", "xor edx, edx"],
     ["add rdx, rax"], 4, "0", 1, "OK", 3, [("R13 + R14 * 4 + 0x40", 8, "R")]),
    ("sync fails: undecodable bytes before IP", b"\x06" * 24, [],
     ["add rdx, rax"], 4, "0", 0, "SYNC_FAILED", 0, []),
    ("no sync needed for the instruction at IP", b"\x06" * 24, [],
     ["mov rax, [rbx+8]"], 4, "0", 1, "OK", 0, [("RBX + 8", 8, "R")]),
]

def assemble(lines):
    if not lines:
        return b""
    with tempfile.TemporaryDirectory() as d:
        src, obj, out = (os.path.join(d, n) for n in ("a.s", "a.o", "a.bin"))
        with open(src, "w") as f:
            f.write(".intel_syntax noprefix\n" + "\n".join(lines) + "\n")
        subprocess.run(["as", "-o", obj, src], check=True)
        subprocess.run(["objcopy", "-O", "binary", "-j", ".text", obj, out],
                       check=True)
        return open(out, "rb").read()

RW = {"R": "CM_ACCESS_READ", "W": "CM_ACCESS_WRITE",
      "RW": "CM_ACCESS_READ | CM_ACCESS_WRITE"}

for (name, junk, before, at, lb, flags, rc, reason, back, refs) in CASES:
    pre = junk + assemble(before)
    code = pre + assemble(at) + b"\x90" * 4     # bytes after IP, as read
    src = "; ".join(before) + " | " + "; ".join(at)
    src = "\n\t   * ".join(textwrap.wrap(src, 64))
    print("\t{ \"%s\",\n\t  /* %s */" % (name, src))
    rows = [", ".join("0x%02x" % b for b in code[i:i + 10])
            for i in range(0, len(code), 10)]
    hexs = ",\n\t    ".join(rows)
    print("\t  { %s },\n\t  %d, %d, %d, %s, %d, CM_DECODE_%s, %d, %d," %
          (hexs, len(code), len(pre), lb, flags, rc, reason, back, len(refs)))
    r = ", ".join("{ %s, %d, %s }" % (a, s, RW[w]) for a, s, w in refs)
    print("\t  { %s } }," % (r if r else "{ 0, 0, 0 }"))
