/**
 * The run-option declaration as the other sides read it: the JSON Schema of Settings →
 * Autoresearch (schema/plugin.json), which test/run-options.test.ts keeps equal to the committed
 * file, and the settings' defaults the panel starts from.
 */
import { TAG_MAX, TAG_PATTERN } from '../journal/layout';
import { RUN_OPTIONS, runOptionList, type OptionKind, type RunSettings, type SettingKey } from './run-options';

const JSON_TYPES: Record<OptionKind, object> = {
  positive: { type: 'number', exclusiveMinimum: 0 },
  nonnegative: { type: 'number', minimum: 0 },
  'positive-int': { type: 'integer', minimum: 1 },
  count: { type: 'integer', minimum: 0 },
  text: { type: 'string' },
  tag: { type: 'string', pattern: `^(?:${TAG_PATTERN})$`, minLength: 1, maxLength: TAG_MAX },
  choice: { type: 'string' },
  switch: { type: 'boolean' },
};

/** The JSON Schema properties of the run options in Settings → Autoresearch. */
export function settingsProperties(): Record<string, object> {
  const props: Record<string, object> = {};
  for (const o of runOptionList()) {
    if (!o.setting) {
      continue;
    }
    const { type, ...bounds } = JSON_TYPES[o.kind] as { type: string };
    props[o.key] = {
      title: o.setting.title,
      description: o.setting.description,
      type: o.setting.default === null ? [type, 'null'] : type,
      ...(o.choices && { enum: o.setting.default === null ? [...o.choices, null] : [...o.choices] }),
      ...bounds,
      ...(o.max !== undefined && { maximum: o.max }),
      default: o.setting.default,
    };
  }
  return props;
}

/**
 * schema/plugin.json as the declaration has it: the run options first, then the settings that
 * are not run options (kept from `current`, the committed file).
 */
export function settingsSchema(current: { properties: Record<string, object> } & Record<string, unknown>): object {
  const runs = settingsProperties();
  const others = Object.entries(current.properties).filter(([key]) => !(key in RUN_OPTIONS));
  return { ...current, properties: { ...runs, ...Object.fromEntries(others) } };
}

/** The run options that are settings, in the declaration's order. */
export function settingKeys(): SettingKey[] {
  return runOptionList().flatMap(o => (o.setting ? [o.key as SettingKey] : []));
}

/** The settings' defaults for the run options, as RunSettings. */
export function runSettingDefaults(): RunSettings {
  const entries = runOptionList().flatMap(o => (o.setting ? [[o.key, o.setting.default]] : []));
  return Object.fromEntries(entries) as RunSettings;
}
