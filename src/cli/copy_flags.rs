//! `--junit FILE`, `--json FILE`, `--html FILE`: one flag per copy format, made from the formats'
//! list (`actors::reporter::copies::FORMATS`), so a new format needs no change here or in the
//! binary.

use crate::actors::reporter::copies::FORMATS;
use crate::model::options::SuiteCopy;
use clap::{Arg, ArgMatches, Args, Command, FromArgMatches};
use std::path::PathBuf;

/// The copies asked for on the command line, in the formats' order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CopyFlags {
    pub copies: Vec<SuiteCopy>,
}

impl Args for CopyFlags {
    fn augment_args(cmd: Command) -> Command {
        FORMATS.iter().fold(cmd, |cmd, format| {
            cmd.arg(
                Arg::new(format.flag)
                    .long(format.flag)
                    .value_name("FILE")
                    .value_parser(clap::value_parser!(PathBuf))
                    .help(format.help),
            )
        })
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

impl FromArgMatches for CopyFlags {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let copies = FORMATS
            .iter()
            .filter_map(|format| {
                matches
                    .get_one::<PathBuf>(format.flag)
                    .map(|path| SuiteCopy {
                        format: format.flag.to_string(),
                        path: path.clone(),
                    })
            })
            .collect();
        Ok(Self { copies })
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}
