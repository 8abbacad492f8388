# A PDF of PAGES pages (each: a content stream drawing text and lines), then
# damaged on purpose when DAMAGE=1: a wrong startxref, every 7th xref
# entry off by some bytes, every 13th object lacking its "endobj", every
# 17th stream with a wrong /Length. qpdf must recover (it throws and catches
# its QPDFExc for each: the C++ exception path).
function out(s) { printf "%s", s; pos += length(s) }
function obj(n, body) { off[n] = pos; out(n " 0 obj\n" body ((DAMAGE && n % 13 == 0) ? "\n" : "\nendobj\n")) }
BEGIN {
    pos = 0; n = 3 + 2 * PAGES + 1
    out("%PDF-1.4\n%\342\343\317\323\n")
    obj(1, "<< /Type /Catalog /Pages 2 0 R >>")
    kids = ""
    for (p = 0; p < PAGES; p++) kids = kids (3 + 2 * p) " 0 R "
    obj(2, "<< /Type /Pages /Count " PAGES " /Kids [ " kids "] >>")
    font = 3 + 2 * PAGES
    for (p = 0; p < PAGES; p++) {
        pg = 3 + 2 * p; cs = pg + 1
        obj(pg, "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 " font " 0 R >> >> /Contents " cs " 0 R >>")
        s = "BT /F1 12 Tf 72 720 Td (Page " p + 1 " of " PAGES ") Tj ET\n"
        for (l = 0; l < 20; l++)
            s = s sprintf("BT /F1 10 Tf 72 %d Td (line %d: the quick brown fox %d jumps) Tj ET\n%d %d m %d %d l S\n", 700 - 30 * l, l, p * 31 + l, 72, 690 - 30 * l, 540, 690 - 30 * l)
        len = length(s) + ((DAMAGE && cs % 17 == 0) ? 9 : 0)
        obj(cs, "<< /Length " len " >>\nstream\n" s "endstream")
    }
    obj(font, "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    x = pos
    out("xref\n0 " n "\n0000000000 65535 f \n")
    for (i = 1; i < n; i++) out(sprintf("%010d 00000 n \n", off[i] + ((DAMAGE && i % 7 == 0) ? 5 : 0)))
    out("trailer\n<< /Size " n " /Root 1 0 R >>\nstartxref\n" (DAMAGE == 1 ? x + 11 : x) "\n%%EOF\n")
}
