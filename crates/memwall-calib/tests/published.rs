//! The validation table: rows refused with line and column, rows set aside with their
//! reason (excluded by hand, not stateable, physically impossible), the rest cross-validated.

use memwall_calib::published::{parse_table, validate};

const HEADER: &str = "id,unit_device,device,ram_gib,model,weights,engine,backend,threads,depth,gen_tokens,measured_tok_s,exclude,source\n";

#[test]
fn rows_are_used_or_set_aside_with_their_reason() {
    let text = format!(
        "{HEADER}\
         a,pi5,raspberry-pi-5-8gb,,llama-3.2-1b,Q4_K_M,llama.cpp,cpu,4,0,128,12.0,,test\n\
         b,pi5,raspberry-pi-5-8gb,,llama-3.2-1b,Q8_0,llama.cpp,cpu,4,0,128,8.0,,test\n\
         c,m2,apple-m2-16gb,,llama-3.2-1b,Q4_K_M,llama.cpp,cpu,4,0,128,40.0,,test\n\
         d,pi5,raspberry-pi-5-8gb,,llama-3.2-1b,Q4_K_M,llama.cpp,cpu,4,0,128,500.0,,test\n\
         e,pi5,no-such-device,,llama-3.2-1b,Q4_K_M,llama.cpp,cpu,4,0,128,10.0,,test\n\
         f,pi5,raspberry-pi-5-8gb,,llama-3.2-1b,Q4_K_M,llama.cpp,cpu,4,0,128,10.0,a build known to differ,test\n"
    );
    let rows = parse_table(&text, "t.csv").unwrap();
    let v = validate(&rows).unwrap();
    let ids: Vec<&str> = v.validated.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["a", "b", "c"]);
    let why = |id: &str| v.excluded.iter().find(|x| x.0 == id).map(|x| x.1.clone()).unwrap();
    assert!(why("d").contains("physically impossible") && why("d").contains("peak bandwidth"), "{}", why("d"));
    assert!(why("e").contains("no-such-device") && !why("e").contains("presets:"), "{}", why("e"));
    assert_eq!(why("f"), "a build known to differ");
    // Every used row has a prediction by a fit that left its device out, and the roofline.
    for r in &v.validated {
        assert!(r.predicted_tok_s > 0.0 && r.roofline_tok_s > r.measured_tok_s, "{r:?}");
    }
}

#[test]
fn malformed_tables_name_the_line_and_column() {
    let cases = [
        (
            format!("{HEADER}a,pi5,raspberry-pi-5-8gb,,m,Q4_K_M,llama.cpp,cpu,four,0,128,12.0,,s\n"),
            "line 2, column threads",
        ),
        (
            format!("{HEADER}a,pi5,raspberry-pi-5-8gb,,m,Q4_K_M,llama.cpp,cpu,4,0,128,-1,,s\n"),
            "line 2, column measured_tok_s",
        ),
        (format!("{HEADER}a,pi5,raspberry-pi-5-8gb,,m,Q4_K_M,llama.cpp,cpu,4,0,128,0,,s\n"), "must be > 0"),
        ("id,device\na,b\n".to_string(), "column unit_device"),
    ];
    for (text, needle) in cases {
        let err = parse_table(&text, "t.csv").unwrap_err().to_string();
        assert!(err.contains(needle) && err.contains("t.csv"), "`{needle}` not in {err}");
    }
}
