#!/usr/bin/env python3
"""Turns kinet's reference pages (docs/api/*.3.md) into man pages.

    scripts/md2man.py OUTDIR PAGE.3.md...  [--version V]

For each page writes OUTDIR/man3/<page>.3 (roff, man macros) and, for
every function the page documents (its NAME line and the calls of its
SYNOPSIS) that has no page of its own, OUTDIR/man3/<function>.3 holding
`.so man3/<page>.3`, as rdma-core does: `man kinet_qp_post_send` opens
kinet_qp_post(3).  Only the Python standard library: pandoc is not needed
to install kinet.

Handles the markdown these pages use: headings, paragraphs, fenced code,
definition lists (a term line, then ": text"), bullet and numbered lists,
tables (each row a tagged paragraph: roff tables need tbl), inline code,
emphasis and links.
"""
import os
import re
import sys

FN_RE = re.compile(r"\b(kinet_[a-z0-9_]+)\s*\(")


def esc(text):
    """Escapes roff's special characters in running text."""
    text = text.replace("\\", "\\e")
    # Non-ASCII as groff's Unicode escapes: the page reads the same whether
    # or not man runs it through preconv.
    return "".join(c if ord(c) < 128 else "\\[u%04X]" % ord(c) for c in text)


def inline(text):
    """Markdown inline markup to roff font changes; text is unescaped."""
    out = []
    # Code spans first: nothing inside them is markup.
    for i, part in enumerate(re.split(r"(`[^`]*`)", text)):
        if i % 2:
            out.append("\\fB" + esc(part[1:-1]) + "\\fR")
            continue
        part = esc(part)
        part = re.sub(r"\[([^\]]+)\]\(([^)]+)\)", r"\1", part)
        part = re.sub(r"\*\*([^*]+)\*\*", r"\\fB\1\\fR", part)
        part = re.sub(r"(?<![\w*])\*([^*\s][^*]*)\*(?![\w*])", r"\\fI\1\\fR", part)
        part = re.sub(r"(?<!\w)_([^_\s][^_]*)_(?!\w)", r"\\fI\1\\fR", part)
        out.append(part)
    return "".join(out)


def line_out(text):
    """One output line of text: a leading dot or quote would be a request."""
    if text.startswith((".", "'")):
        return "\\&" + text
    return text


def table_row(cells):
    return [c.strip() for c in cells.strip().strip("|").split("|")]


def convert(md, name, section, version):
    lines = md.split("\n")
    out = ['.TH "%s" "%s" "" "kinet %s" "kinet Programmer\'s Manual"' % (name.upper(), section, version)]
    i = 0
    para = []  # lines of the open paragraph
    section_name = None
    name_text = []

    def flush():
        if para:
            text = " ".join(s.strip() for s in para)
            if section_name == "NAME":
                name_text.append(text)
            else:
                out.append(".PP")
                out.append(line_out(inline(text)))
            para.clear()

    while i < len(lines):
        ln = lines[i]
        if ln.startswith("```"):
            flush()
            block = []
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                block.append(lines[i])
                i += 1
            i += 1
            out.append(".PP")
            out.append(".RS 4")
            out.append(".nf")
            out.extend(line_out(esc(b.replace("\t", "        "))) for b in block)
            out.append(".fi")
            out.append(".RE")
            continue
        m = re.match(r"^(#+)\s+(.*)$", ln)
        if m:
            flush()
            level, title = len(m.group(1)), m.group(2).strip()
            if level == 1:
                pass  # the page title: .TH says it
            elif level == 2:
                section_name = title.upper()
                out.append('.SH "%s"' % esc(section_name))
            else:
                out.append('.SS "%s"' % esc(title))
            i += 1
            continue
        if not ln.strip():
            flush()
            i += 1
            continue
        if ln.lstrip().startswith("|"):
            flush()
            rows = []
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                rows.append(table_row(lines[i]))
                i += 1
            header = rows[0]
            body = [r for r in rows[1:] if not all(re.match(r"^:?-+:?$", c) for c in r if c)]
            for r in body:
                out.append(".TP")
                out.append(line_out(inline(r[0]) if r[0] else "\\&"))
                rest = []
                for k, c in enumerate(r[1:], 1):
                    if not c:
                        continue
                    h = header[k] if k < len(header) else ""
                    rest.append((inline(h) + ": " if h and len(header) > 2 else "") + inline(c))
                out.append(line_out("; ".join(rest) if rest else "\\&"))
            continue
        # A definition: a term line followed by ": text" lines.
        if i + 1 < len(lines) and lines[i + 1].startswith(": ") and not ln.startswith(("- ", ": ")):
            flush()
            out.append(".TP")
            out.append(line_out(inline(ln.strip())))
            i += 1
            text = [lines[i][2:]]
            i += 1
            while i < len(lines) and lines[i].startswith("  ") and lines[i].strip():
                text.append(lines[i].strip())
                i += 1
            out.append(line_out(inline(" ".join(text))))
            continue
        m = re.match(r"^(\s*)(-|\*|\d+\.)\s+(.*)$", ln)
        if m and not (m.group(2) == "*" and m.group(3).endswith("*")):
            flush()
            mark = "\\(bu" if m.group(2) in "-*" else m.group(2)
            text = [m.group(3)]
            i += 1
            while i < len(lines) and lines[i].startswith("  ") and lines[i].strip() and \
                    not re.match(r"^\s*(-|\d+\.)\s", lines[i]):
                text.append(lines[i].strip())
                i += 1
            out.append(".IP %s 4" % mark)
            out.append(line_out(inline(" ".join(text))))
            continue
        if ln.startswith(": ") and out and out[-1] != ".PP":
            # A further paragraph of the last definition.
            out.append(".IP")
            out.append(line_out(inline(ln[2:])))
            i += 1
            continue
        para.append(ln)
        i += 1
    flush()
    # NAME is one line for whatis and mandb: "a, b \- what they are".
    if name_text:
        text = " ".join(name_text)
        names, _, what = text.partition(" - ")
        idx = out.index('.SH "NAME"')
        out.insert(idx + 1, esc(names.strip()) + " \\- " + esc(what.strip()))
    return "\n".join(out) + "\n", names_of(name_text, md)


def names_of(name_text, md):
    """The functions a page documents: its NAME line and its SYNOPSIS calls."""
    names = []
    if name_text:
        head = " ".join(name_text).partition(" - ")[0]
        names += [n.strip() for n in head.split(",") if re.match(r"^kinet_[a-z0-9_]+$", n.strip())]
    m = re.search(r"^## SYNOPSIS\s*$(.*?)^## ", md, re.S | re.M)
    if m:
        names += FN_RE.findall(m.group(1))
    seen = []
    for n in names:
        if n not in seen:
            seen.append(n)
    return seen


def main(argv):
    version = "0"
    args = []
    it = iter(argv[1:])
    for a in it:
        if a == "--version":
            version = next(it)
        else:
            args.append(a)
    if len(args) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    outdir, pages = args[0], args[1:]
    mandir = os.path.join(outdir, "man3")
    os.makedirs(mandir, exist_ok=True)
    own = set()
    links = {}
    for page in pages:
        base = os.path.basename(page)
        m = re.match(r"^(.+)\.(\d)\.md$", base)
        if not m:
            print(f"md2man.py: {page}: not NAME.SECTION.md", file=sys.stderr)
            return 1
        name, section = m.group(1), m.group(2)
        with open(page) as f:
            roff, names = convert(f.read(), name, section, version)
        with open(os.path.join(mandir, f"{name}.{section}"), "w") as f:
            f.write(roff)
        own.add(name)
        for n in names:
            links.setdefault(n, f"{name}.{section}")
    for n, target in sorted(links.items()):
        if n in own:
            continue  # a page of its own wins over a link
        with open(os.path.join(mandir, f"{n}.3"), "w") as f:
            f.write(f".so man3/{target}\n")
    # Links left over from pages since removed would install stale pages.
    want = {f"{n}.3" for n in links if n not in own} | {f"{n}.3" for n in own}
    for f in os.listdir(mandir):
        if f not in want:
            os.remove(os.path.join(mandir, f))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
