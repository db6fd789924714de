import { describe, expect, it } from "vitest";
import { sniffContentType } from "../../src/api/content-sniff.ts";

describe("sniffContentType", () => {
  it("gives Go's DetectContentType answers, with pages a browser renders as text/plain", () => {
    expect(sniffContentType(Buffer.from("line 0\n"))).toBe("text/plain; charset=utf-8");
    expect(sniffContentType(Buffer.from("  <!DOCTYPE html><html>"))).toBe("text/plain");
    expect(sniffContentType(Buffer.from("<p>x</p>"))).toBe("text/plain");
    expect(sniffContentType(Buffer.from("<?xml version"))).toBe("text/xml; charset=utf-8");
    expect(sniffContentType(Buffer.from("%PDF-1.7"))).toBe("application/pdf");
    expect(sniffContentType(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0]))).toBe(
      "image/png",
    );
    expect(sniffContentType(Buffer.from([0x1f, 0x8b, 0x08, 0]))).toBe("application/x-gzip");
    expect(sniffContentType(Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0x02, 0x01]))).toBe(
      "application/octet-stream",
    );
    expect(sniffContentType(Buffer.alloc(0))).toBe("text/plain; charset=utf-8");
  });
});
