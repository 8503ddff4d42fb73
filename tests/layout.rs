//! The source tree's layering, checked on the real `src/` files: the
//! folders depend one way (cli -> reproduce -> pipeline and tools ->
//! generate -> stages -> maia and engine -> chess -> core; the two folders
//! of one layer never use each other), a stage uses only stages that run
//! before it, and no two files import each other, directly or around a
//! circle.
//!
//! A file's dependencies are the modules its code names: `crate::a::b` and
//! `super::x` paths (including `use` groups such as `crate::a::{b, c}`), and
//! in a `mod.rs` the child modules it calls by name (`card::write`).
//! Comments are skipped, so a doc link to a higher module is not a
//! dependency.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Folders by layer: a folder may use folders of a lower layer only.
const LAYERS: [(&str, u32); 10] = [
    ("core", 0),
    ("chess", 1),
    ("engine", 2),
    ("maia", 2),
    ("stages", 3),
    ("generate", 4),
    ("tools", 5),
    ("pipeline", 5),
    ("reproduce", 6),
    ("cli", 7),
];

type ModulePath = Vec<String>;

struct SourceFile {
    module: ModulePath,
    is_mod_rs: bool,
    /// Code with comments removed.
    code: String,
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.push(path.clone());
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file without `//` comments (string contents are kept;
/// a `//` inside a string literal such as a URL ends the line's code, which
/// only ever drops text, never adds a dependency).
fn strip_comments(text: &str) -> String {
    let mut code = String::new();
    for line in text.lines() {
        let mut in_string = false;
        let mut previous = ' ';
        let mut end = line.len();
        for (at, c) in line.char_indices() {
            if c == '"' && previous != '\\' {
                in_string = !in_string;
            }
            if !in_string && c == '/' && previous == '/' {
                end = at - 1;
                break;
            }
            previous = c;
        }
        code.push_str(&line[..end]);
        code.push('\n');
    }
    code
}

fn load() -> BTreeMap<ModulePath, SourceFile> {
    let root = src_dir();
    let mut paths = Vec::new();
    rust_files(&root, &mut paths);
    let mut files = BTreeMap::new();
    for path in paths.into_iter().filter(|p| p.is_file()) {
        let relative = path.strip_prefix(&root).unwrap();
        let parts: Vec<String> = relative
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        // The binaries are the crate's users, not part of its layers.
        if parts[0] == "bin" || parts == ["main.rs"] || parts == ["lib.rs"] {
            continue;
        }
        let is_mod_rs = parts.last().is_some_and(|p| p == "mod.rs");
        let mut module: ModulePath = parts.clone();
        if is_mod_rs {
            module.pop();
        } else if let Some(last) = module.last_mut() {
            *last = last.trim_end_matches(".rs").to_string();
        }
        let code = strip_comments(&std::fs::read_to_string(&path).unwrap());
        files.insert(
            module.clone(),
            SourceFile {
                module,
                is_mod_rs,
                code,
            },
        );
    }
    files
}

/// Every path that follows `prefix::` in `code`, with `use` groups
/// expanded: `crate::a::{b, c::d}` gives `a::b` and `a::c::d`.
fn paths_after(code: &str, prefix: &str) -> Vec<ModulePath> {
    let mut found = Vec::new();
    let bytes = code.as_bytes();
    let mut start = 0;
    while let Some(at) = code[start..].find(prefix) {
        let begin = start + at;
        start = begin + prefix.len();
        let before_ok = begin == 0 || {
            let c = bytes[begin - 1] as char;
            !(c.is_alphanumeric() || c == '_')
        };
        if before_ok {
            let mut at = start;
            expand(code, &mut at, Vec::new(), &mut found);
        }
    }
    found
}

/// Reads a path (or a `{...}` group of paths) at `*at`.
fn expand(code: &str, at: &mut usize, base: ModulePath, found: &mut Vec<ModulePath>) {
    let bytes = code.as_bytes();
    let mut path = base;
    loop {
        while *at < bytes.len() && (bytes[*at] as char).is_whitespace() {
            *at += 1;
        }
        if *at < bytes.len() && bytes[*at] == b'{' {
            *at += 1;
            loop {
                expand(code, at, path.clone(), found);
                while *at < bytes.len() && (bytes[*at] as char).is_whitespace() {
                    *at += 1;
                }
                match bytes.get(*at) {
                    Some(b',') => *at += 1,
                    Some(b'}') => {
                        *at += 1;
                        return;
                    }
                    _ => return,
                }
                while *at < bytes.len() && (bytes[*at] as char).is_whitespace() {
                    *at += 1;
                }
                if bytes.get(*at) == Some(&b'}') {
                    *at += 1;
                    return;
                }
            }
        }
        let ident_start = *at;
        while *at < bytes.len() && ((bytes[*at] as char).is_alphanumeric() || bytes[*at] == b'_') {
            *at += 1;
        }
        if ident_start == *at {
            break;
        }
        path.push(code[ident_start..*at].to_string());
        if code[*at..].starts_with("::") {
            *at += 2;
        } else {
            break;
        }
    }
    if !path.is_empty() {
        found.push(path);
    }
}

/// The module file a path names: its longest prefix that is a file.
fn resolve(files: &BTreeMap<ModulePath, SourceFile>, mut path: ModulePath) -> Option<ModulePath> {
    while !path.is_empty() {
        if files.contains_key(&path) {
            return Some(path);
        }
        path.pop();
    }
    None
}

fn dependencies(
    files: &BTreeMap<ModulePath, SourceFile>,
) -> BTreeMap<ModulePath, BTreeSet<ModulePath>> {
    let mut graph = BTreeMap::new();
    for file in files.values() {
        let mut deps = BTreeSet::new();
        for path in paths_after(&file.code, "crate::") {
            deps.extend(resolve(files, path));
        }
        // `super` from a.rs or a/mod.rs inside folder f names f's module.
        let parent: ModulePath = file.module[..file.module.len() - 1].to_vec();
        for path in paths_after(&file.code, "super::") {
            let mut full = parent.clone();
            full.extend(path);
            deps.extend(resolve(files, full));
        }
        if file.is_mod_rs {
            for (child_path, _) in files.range(file.module.clone()..) {
                if child_path.len() != file.module.len() + 1
                    || child_path[..file.module.len()] != file.module[..]
                {
                    continue;
                }
                let name = child_path.last().unwrap();
                if !paths_after(&file.code, &format!("{name}::")).is_empty() {
                    deps.insert(child_path.clone());
                }
            }
        }
        deps.remove(&file.module);
        graph.insert(file.module.clone(), deps);
    }
    graph
}

fn layer(module: &ModulePath) -> u32 {
    LAYERS
        .iter()
        .find(|(folder, _)| module[0] == *folder)
        .map(|(_, layer)| *layer)
        .unwrap_or_else(|| {
            panic!(
                "{} is in no layer: add its folder to LAYERS",
                module.join("::")
            )
        })
}

/// The stages in the order `src/stages/mod.rs` declares them.
fn stage_order() -> Vec<String> {
    let text = std::fs::read_to_string(src_dir().join("stages/mod.rs")).unwrap();
    text.lines()
        .filter_map(|line| line.trim().strip_prefix("pub mod "))
        .map(|rest| rest.trim_end_matches(';').to_string())
        .collect()
}

#[test]
fn folders_depend_downward_only() {
    let files = load();
    let graph = dependencies(&files);
    let mut upward = Vec::new();
    for (from, deps) in &graph {
        for to in deps {
            let (a, b) = (layer(from), layer(to));
            let sideways = a == b && from[0] != to[0];
            if b > a || sideways {
                upward.push(format!("{} -> {}", from.join("::"), to.join("::")));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports against the layers:\n{}",
        upward.join("\n")
    );
}

#[test]
fn stages_use_only_earlier_stages() {
    let files = load();
    let graph = dependencies(&files);
    let order = stage_order();
    assert!(order.len() >= 9, "stages/mod.rs lists {order:?}");
    let rank = |module: &ModulePath| -> Option<usize> {
        (module[0] == "stages" && module.len() > 1)
            .then(|| order.iter().position(|s| *s == module[1]))
            .flatten()
    };
    let mut later = Vec::new();
    for (from, deps) in &graph {
        for to in deps {
            if let (Some(a), Some(b)) = (rank(from), rank(to))
                && b > a
            {
                later.push(format!("{} -> {}", from.join("::"), to.join("::")));
            }
        }
    }
    assert!(
        later.is_empty(),
        "stages using later stages:\n{}",
        later.join("\n")
    );
}

#[test]
fn no_file_imports_another_in_a_circle() {
    let files = load();
    let graph = dependencies(&files);
    // Tarjan's strongly connected components.
    struct State<'a> {
        graph: &'a BTreeMap<ModulePath, BTreeSet<ModulePath>>,
        index: BTreeMap<&'a ModulePath, usize>,
        low: BTreeMap<&'a ModulePath, usize>,
        stack: Vec<&'a ModulePath>,
        on_stack: BTreeSet<&'a ModulePath>,
        next: usize,
        circles: Vec<Vec<String>>,
    }
    fn visit<'a>(state: &mut State<'a>, node: &'a ModulePath) {
        state.index.insert(node, state.next);
        state.low.insert(node, state.next);
        state.next += 1;
        state.stack.push(node);
        state.on_stack.insert(node);
        for next in &state.graph[node] {
            let next = state.graph.get_key_value(next).unwrap().0;
            if !state.index.contains_key(next) {
                visit(state, next);
                let low = state.low[node].min(state.low[next]);
                state.low.insert(node, low);
            } else if state.on_stack.contains(next) {
                let low = state.low[node].min(state.index[next]);
                state.low.insert(node, low);
            }
        }
        if state.low[node] == state.index[node] {
            let mut component = Vec::new();
            while let Some(top) = state.stack.pop() {
                state.on_stack.remove(top);
                component.push(top.join("::"));
                if top == node {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                state.circles.push(component);
            }
        }
    }
    let mut state = State {
        graph: &graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        circles: Vec::new(),
    };
    for node in graph.keys() {
        if !state.index.contains_key(node) {
            visit(&mut state, node);
        }
    }
    let text: Vec<String> = state.circles.iter().map(|c| c.join(" <-> ")).collect();
    assert!(
        text.is_empty(),
        "files importing each other in a circle:\n{}",
        text.join("\n")
    );
}

#[test]
fn the_checker_sees_groups_super_and_children() {
    let found = paths_after(
        "use crate::a::{b, c::{d, e}};\nlet x = crate::f::g();",
        "crate::",
    );
    let names: Vec<String> = found.iter().map(|p| p.join("::")).collect();
    assert_eq!(names, ["a::b", "a::c::d", "a::c::e", "f::g"]);
    let code = strip_comments("let a = 1; // crate::x::y\n/// [`crate::z`]\nlet u = \"http://h\";");
    assert!(!code.contains("crate::"), "{code}");
    // The real tree: the pipeline uses the stages, so the graph is not empty.
    let files = load();
    let graph = dependencies(&files);
    let run = graph
        .get(&vec!["pipeline".to_string(), "run".to_string()])
        .unwrap();
    assert!(
        run.iter()
            .any(|m| m[0] == "pipeline" || m[0] == "stages" || m[0] == "engine")
    );
}
