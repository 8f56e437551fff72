/**
 * Category rules (TRIAGE-3): the ordered rules of Allure's `categories.json`, which name a group
 * before anyone triages it. Pure: checking a rule set, and finding the first rule a failure matches.
 */

import safeRegex from 'safe-regex2';
import { LIMITS } from './normalise.ts';

export type RuleStatus = 'failed' | 'broken';
export type RuleDefectType = 'product_bug' | 'automation_bug' | 'system_issue' | 'no_defect' | 'to_investigate';

export interface FailureRule {
  name: string;
  messageRegex?: string;
  traceRegex?: string;
  matchedStatuses?: RuleStatus[];
  defectType?: RuleDefectType;
}

/** What a rule is matched against: the error as reported (bounded), and the verdict of what failed. */
export interface RuleSubject {
  message: string;
  /** The trace, when known; a rule with a trace regex matches no failure without one. */
  trace: string | null;
  status: RuleStatus;
}

/** The longest regex a rule may carry. */
export const RULE_REGEX_CHARS = 1000;

/** A problem with one regex of a rule set: where it is (`/rules/2/messageRegex`) and what is wrong. */
export interface RuleProblem {
  index: number;
  field: 'messageRegex' | 'traceRegex';
  message: string;
}

const compiled = new Map<string, RegExp>();

/** The regex as it matches: the whole text, `.` matching line ends too (Allure matches the whole message, DOTALL). */
function regexOf(source: string): RegExp {
  let regex = compiled.get(source);
  if (!regex) {
    regex = new RegExp(`^(?:${source})$`, 's');
    // A rule set holds at most 100 rules of two regexes: the cache stays small unless rules churn.
    if (compiled.size > 1000) compiled.clear();
    compiled.set(source, regex);
  }
  return regex;
}

/**
 * The problems of a rule set's regexes: too long, not compiling, or able to backtrack exponentially
 * (safe-regex2's star height test), since the rules run on every failure recorded.
 */
export function ruleProblems(rules: readonly FailureRule[]): RuleProblem[] {
  const problems: RuleProblem[] = [];
  rules.forEach((rule, index) => {
    for (const field of ['messageRegex', 'traceRegex'] as const) {
      const source = rule[field];
      if (source === undefined) continue;
      if (source.length > RULE_REGEX_CHARS) {
        problems.push({ index, field, message: `is longer than ${RULE_REGEX_CHARS} characters` });
        continue;
      }
      try {
        regexOf(source);
      } catch (error) {
        problems.push({ index, field, message: `does not compile: ${(error as Error).message}` });
        continue;
      }
      if (!safeRegex(source))
        problems.push({ index, field, message: 'can backtrack exponentially (nested quantifiers); write it without them' });
    }
  });
  return problems;
}

/** The first rule the failure matches, or undefined. The rules must have passed `ruleProblems`. */
export function firstMatchingRule(rules: readonly FailureRule[], subject: RuleSubject): FailureRule | undefined {
  const message = subject.message.slice(0, LIMITS.messageChars);
  const trace = subject.trace === null ? null : subject.trace.slice(0, LIMITS.traceHeadChars);
  return rules.find((rule) => {
    if (rule.matchedStatuses !== undefined && !rule.matchedStatuses.includes(subject.status)) return false;
    if (rule.messageRegex !== undefined && !regexOf(rule.messageRegex).test(message)) return false;
    if (rule.traceRegex !== undefined && (trace === null || !regexOf(rule.traceRegex).test(trace))) return false;
    return true;
  });
}
