// A module that exports no tool: TOOL_MODULES naming it stops start-up.
export const notATool = { name: 'reports_nothing' };
