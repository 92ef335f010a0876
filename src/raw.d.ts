// Text imports (`import text from './file.py?raw'`): esbuild's raw plugin and Vite both provide them.
declare module '*?raw' {
  const content: string;
  export default content;
}
