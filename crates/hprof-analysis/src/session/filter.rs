//! The thesis's method filter, shared by the CPU and memory views.

/// Comma-separated patterns, `!` in front excludes. A pattern that starts
/// with `.` matches anywhere in the name (`!.io.` drops `java.io.X.m`);
/// others match a name's start (`java.`). A frame is kept when no include
/// is given or one include matches, and no exclude matches.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct MethodFilter {
    include: Vec<String>,
    exclude: Vec<String>,
}

impl MethodFilter {
    pub fn parse(s: &str) -> Self {
        let mut f = MethodFilter::default();
        for p in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            match p.strip_prefix('!') {
                Some(x) if !x.trim().is_empty() => f.exclude.push(x.trim().to_string()),
                Some(_) => {}
                None => f.include.push(p.to_string()),
            }
        }
        f
    }

    pub fn is_empty(&self) -> bool {
        self.include.is_empty() && self.exclude.is_empty()
    }

    fn matches(p: &str, name: &str) -> bool {
        if p.starts_with('.') {
            name.contains(p)
        } else {
            name.starts_with(p)
        }
    }

    pub fn keeps(&self, name: &str) -> bool {
        (self.include.is_empty() || self.include.iter().any(|p| Self::matches(p, name)))
            && !self.exclude.iter().any(|p| Self::matches(p, name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn method_filter_in_the_thesis_syntax() {
        let f = MethodFilter::parse("java., !.io., demo.");
        assert!(f.keeps("java.lang.String.hashCode"));
        assert!(f.keeps("demo.App.run"));
        assert!(!f.keeps("java.io.FileInputStream.read"));
        assert!(!f.keeps("Main.main"));
        assert!(MethodFilter::parse("").keeps("anything"));
        assert!(MethodFilter::parse(" , ,! ").is_empty());
        assert!(!MethodFilter::parse("!Main.").keeps("Main.main"));
    }
}
