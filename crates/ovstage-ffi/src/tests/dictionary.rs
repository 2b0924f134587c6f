//! The path dictionary's twelve functions.

use super::*;
use crate::abi::ovx_types::ovx_api_result_t;

fn ok(r: ovx_api_result_t) {
    assert_eq!(r.status.0, 0, "{:?}", text(r.error));
}

/// Expects an error whose message contains `needle`; releases it.
fn err(vt: &path_dictionary_vtable_t, d: *mut path_dictionary_instance_t, r: ovx_api_result_t, needle: &str) {
    assert_eq!(r.status.0, 1);
    let msg = text(r.error).expect("a message");
    assert!(msg.contains(needle), "{msg:?} lacks {needle:?}");
    // SAFETY: live dictionary; the message came from it.
    unsafe { (vt.release_error.unwrap())((*d).context, r.error) };
}

#[test]
fn tokens_paths_and_lists_round_trip() {
    let _g = shared();
    let i = Inst::new();
    let (vt, d) = i.dict();
    // SAFETY: live dictionary; every array below has the count passed.
    unsafe {
        let ctx = (*d).context;
        let names = [s("World"), s("Box"), s("World")];
        let mut toks = [0u64; 3];
        ok((vt.create_tokens_from_strings.unwrap())(ctx, names.as_ptr(), 3, toks.as_mut_ptr()));
        assert!(toks[0] != 0 && toks[0] == toks[2] && toks[0] != toks[1]);
        let mut strs = [ovx_string_t::NONE; 2];
        ok((vt.get_strings_from_tokens.unwrap())(ctx, toks.as_ptr(), 2, strs.as_mut_ptr()));
        assert_eq!((text(strs[0]).unwrap(), text(strs[1]).unwrap()), ("World".into(), "Box".into()));
        let mut again = [ovx_string_t::NONE; 1];
        ok((vt.get_strings_from_tokens.unwrap())(ctx, toks.as_ptr(), 1, again.as_mut_ptr()));
        assert_eq!(again[0].ptr, strs[0].ptr, "dictionary-owned storage is stable");

        // Paths from tokens: /World/Box and the root.
        let comps = [toks[0], toks[1]];
        let counts = [2usize, 0];
        let mut paths = [0u64; 2];
        ok((vt.create_paths_from_tokens.unwrap())(ctx, comps.as_ptr(), counts.as_ptr(), 2, paths.as_mut_ptr()));
        let mut from_str = [0u64; 2];
        let texts = [s("/World/Box"), s("/")];
        ok((vt.create_paths_from_strings.unwrap())(ctx, texts.as_ptr(), 2, from_str.as_mut_ptr()));
        assert_eq!(paths, from_str);

        // Decomposition, with a buffer too small for the second path.
        let long = [s("/a/b/c"), s("/d/e")];
        let mut lp = [0u64; 2];
        ok((vt.create_paths_from_strings.unwrap())(ctx, long.as_ptr(), 2, lp.as_mut_ptr()));
        let mut buf = [0u64; 4];
        let mut per = [std::ptr::null_mut(); 2];
        let mut counts = [0usize; 2];
        let mut done = 9usize;
        ok((vt.get_tokens_from_paths.unwrap())(
            ctx,
            lp.as_ptr(),
            2,
            buf.as_mut_ptr(),
            4,
            per.as_mut_ptr(),
            counts.as_mut_ptr(),
            &mut done,
        ));
        assert_eq!((done, counts[0]), (1, 3));
        assert_eq!(per[0], buf.as_mut_ptr());
        let mut names = [ovx_string_t::NONE; 3];
        ok((vt.get_strings_from_tokens.unwrap())(ctx, buf.as_ptr(), 3, names.as_mut_ptr()));
        assert_eq!(names.iter().map(|n| text(*n).unwrap()).collect::<Vec<_>>(), ["a", "b", "c"]);

        // Lists: create, count, page, reference counting.
        let mut list = 0;
        ok((vt.create_path_list_from_paths.unwrap())(ctx, lp.as_ptr(), 2, &mut list));
        let mut n = 0;
        ok((vt.get_num_paths_from_path_list.unwrap())(ctx, list, &mut n));
        assert_eq!(n, 2);
        let mut page = [0u64; 4];
        let mut got = 0;
        ok((vt.get_paths_from_path_list.unwrap())(ctx, list, 1, 4, page.as_mut_ptr(), &mut got));
        assert_eq!((got, page[0]), (1, lp[1]));
        ok((vt.add_path_list_reference.unwrap())(ctx, list));
        ok((vt.release_path_list_reference.unwrap())(ctx, list));
        ok((vt.release_path_list_reference.unwrap())(ctx, list));
        err(vt, d, (vt.get_num_paths_from_path_list.unwrap())(ctx, list, &mut n), "");
        ok((vt.add_path_list_reference.unwrap())(ctx, 0));
        ok((vt.release_path_list_reference.unwrap())(ctx, 0));
        let mut empty = 0;
        ok((vt.create_path_list_from_paths.unwrap())(ctx, std::ptr::null(), 0, &mut empty));
        assert_ne!(empty, 0);
        let mut other = 0;
        ok((vt.create_path_list_from_paths.unwrap())(ctx, std::ptr::null(), 0, &mut other));
        assert_ne!(empty, other, "every create makes a new list");
    }
}

#[test]
fn bad_input_is_an_error_with_a_releasable_message() {
    let _g = shared();
    let i = Inst::new();
    let (vt, d) = i.dict();
    // SAFETY: live dictionary; arrays as counted.
    unsafe {
        let ctx = (*d).context;
        let mut t = [0u64; 1];
        err(vt, d, (vt.create_tokens_from_strings.unwrap())(ctx, [s("")].as_ptr(), 1, t.as_mut_ptr()), "empty");
        let nul = "a\0b";
        err(vt, d, (vt.create_tokens_from_strings.unwrap())(ctx, [s(nul)].as_ptr(), 1, t.as_mut_ptr()), "NUL");
        let null_view = ovx_string_t { ptr: std::ptr::null(), length: 3 };
        err(
            vt,
            d,
            (vt.create_paths_from_strings.unwrap())(ctx, [null_view].as_ptr(), 1, t.as_mut_ptr()),
            "NULL string",
        );
        err(vt, d, (vt.create_paths_from_strings.unwrap())(ctx, [s("/1bad")].as_ptr(), 1, t.as_mut_ptr()), "not valid");
        err(
            vt,
            d,
            (vt.create_paths_from_tokens.unwrap())(ctx, std::ptr::null(), [0usize].as_ptr(), 1, t.as_mut_ptr()),
            "tokens_per_path",
        );
        // As on the reference: an unknown token and the token 0 read as the
        // empty string.
        let mut unknown = [ovx_string_t::NONE; 2];
        ok((vt.get_strings_from_tokens.unwrap())(ctx, [777u64, 0].as_ptr(), 2, unknown.as_mut_ptr()));
        assert!(unknown.iter().all(|s| !s.ptr.is_null() && s.length == 0), "{unknown:?}");
        err(
            vt,
            d,
            (vt.create_path_list_from_paths.unwrap())(ctx, [0u64].as_ptr(), 1, t.as_mut_ptr()),
            "invalid path 0",
        );
        err(vt, d, (vt.add_path_list_reference.unwrap())(ctx, 12345), "");
        // Releasing a string the dictionary did not hand out is ignored.
        (vt.release_error.unwrap())(ctx, s("not ours"));
        (vt.release_error.unwrap())(ctx, ovx_string_t::NONE);
        // An unreleased message is freed with the instance.
        let r = (vt.create_tokens_from_strings.unwrap())(ctx, [s("")].as_ptr(), 1, t.as_mut_ptr());
        assert_eq!(r.status.0, 1);
    }
}

#[test]
fn lists_from_path_ids_check_each_id_and_page_out() {
    let _g = shared();
    let i = Inst::new();
    let (vt, d) = i.dict();
    // SAFETY: live dictionary; arrays as counted.
    unsafe {
        let ctx = (*d).context;
        let texts = [s("/A"), s("/A/B"), s("/C")];
        let mut p = [0u64; 3];
        ok((vt.create_paths_from_strings.unwrap())(ctx, texts.as_ptr(), 3, p.as_mut_ptr()));
        let mut list = 0;
        err(
            vt,
            d,
            (vt.create_path_list_from_paths.unwrap())(ctx, [p[0], p[1], 0].as_ptr(), 3, &mut list),
            "paths[2] is the invalid path 0",
        );
        err(
            vt,
            d,
            (vt.create_path_list_from_paths.unwrap())(ctx, [p[0], 9999].as_ptr(), 2, &mut list),
            "not from this dictionary",
        );
        err(
            vt,
            d,
            (vt.create_path_list_from_paths.unwrap())(ctx, [u64::MAX].as_ptr(), 1, &mut list),
            "not from this dictionary",
        );
        err(vt, d, (vt.create_path_list_from_paths.unwrap())(ctx, std::ptr::null(), 2, &mut list), "NULL");
        err(vt, d, (vt.create_path_list_from_paths.unwrap())(ctx, p.as_ptr(), 3, std::ptr::null_mut()), "NULL");
        assert_eq!(list, 0, "a failed create writes no list");
        ok((vt.create_path_list_from_paths.unwrap())(ctx, p.as_ptr(), 3, &mut list));
        let mut page = [0u64; 3];
        let mut got = 9;
        ok((vt.get_paths_from_path_list.unwrap())(ctx, list, 0, 3, page.as_mut_ptr(), &mut got));
        assert_eq!((got, page), (3, p));
        // NULL output with paths to write: an error, nothing counted.
        got = 9;
        err(
            vt,
            d,
            (vt.get_paths_from_path_list.unwrap())(ctx, list, 1, 2, std::ptr::null_mut(), &mut got),
            "out_paths",
        );
        assert_eq!(got, 0);
        // Nothing to write: NULL is fine.
        ok((vt.get_paths_from_path_list.unwrap())(ctx, list, 3, 2, std::ptr::null_mut(), &mut got));
        ok((vt.get_paths_from_path_list.unwrap())(ctx, list, 0, 0, std::ptr::null_mut(), &mut got));
        assert_eq!(got, 0);
        err(
            vt,
            d,
            (vt.get_paths_from_path_list.unwrap())(ctx, list, 4, 2, page.as_mut_ptr(), &mut got),
            "past the end",
        );
        ok((vt.release_path_list_reference.unwrap())(ctx, list));
        err(vt, d, (vt.release_path_list_reference.unwrap())(ctx, list), "unknown or was released");
    }
}
